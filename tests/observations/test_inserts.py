"""Rows inserted by a statement written out (observations.inserts): what bulk_create
would have written, conflicts updating only the fields named, and batches within the
values a statement may bind. On PostgreSQL and SQLite."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext

from observations import inserts
from observations.inserts import rows_insert
from sessions.models import LedgerEntry, ProviderCall

pytestmark = pytest.mark.django_db


def _call(session, step: int) -> ProviderCall:
    return ProviderCall(session=session, step=step, model="openai:gpt-4.1", input_tokens=1_000 + step,
                        cost_usd=Decimal("0.001250"), prefix={"system": "ab", "tools": [1, 2]}, purpose="step")


def _entry(session, n: int, **fields) -> LedgerEntry:
    values = {"path": f"src/m{n}.py", "line_start": 1, "line_end": 30, "content_hash": f"{n:064x}",
              "observation_seq": n, "received_step": n, **fields}
    return LedgerEntry(session=session, range_key=f"range-{n}", **values)


def _rows(model, session) -> list[dict]:
    return [{k: v for k, v in model_to_dict(row).items() if k not in ("id", "session")}
            for row in model.objects.filter(session=session).order_by("pk")]


def test_rows_are_what_bulk_create_writes(make_session):
    written, created = make_session(), make_session(attempt=2)
    rows_insert(ProviderCall, [_call(written, step) for step in range(3)])
    ProviderCall.objects.bulk_create([_call(created, step) for step in range(3)])
    assert _rows(ProviderCall, written) == _rows(ProviderCall, created)
    assert ProviderCall.objects.filter(session=written).values_list("prefix", flat=True)[0] == {
        "system": "ab", "tools": [1, 2]}
    assert all(row.created_at is not None for row in ProviderCall.objects.filter(session=written))


def test_a_conflict_updates_only_the_fields_named(make_session):
    session = make_session()
    rows_insert(LedgerEntry, [_entry(session, n) for n in range(3)])
    rows_insert(LedgerEntry, [_entry(session, 0, in_context=False, times_served=4, path="elsewhere.py"),
                              _entry(session, 3)],
                unique_fields=["session", "range_key"], update_fields=["in_context", "times_served"])
    rows = {row.range_key: row for row in LedgerEntry.objects.filter(session=session)}
    assert sorted(rows) == ["range-0", "range-1", "range-2", "range-3"]
    assert (rows["range-0"].in_context, rows["range-0"].times_served, rows["range-0"].path) == (
        False, 4, "src/m0.py")
    assert (rows["range-1"].in_context, rows["range-1"].times_served) == (True, 1)


def test_rows_past_what_a_statement_may_bind_go_in_batches(make_session, monkeypatch):
    session = make_session()
    fields = len([f for f in LedgerEntry._meta.concrete_fields if not f.primary_key])
    monkeypatch.setattr(inserts, "MAX_BOUND_VALUES", 3 * fields)
    with CaptureQueriesContext(connection) as queries:
        rows_insert(LedgerEntry, [_entry(session, n) for n in range(10)])
    assert len([q for q in queries.captured_queries if q["sql"].startswith("INSERT")]) == 4
    assert LedgerEntry.objects.filter(session=session).count() == 10
