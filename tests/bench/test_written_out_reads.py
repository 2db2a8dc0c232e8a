"""Benchmark: the two reads of every gateway request, written out (the key's look-up,
endpoint/keys.py; the session with its task, room, agent and newest state record,
sessions/ledger/state_store.py), against the ORM's queries they replaced, measured in
the same run: this thread's CPU per read, median of 300, on one open connection.

Run: .venv/bin/pytest -m bench tests/bench/test_written_out_reads.py -s -n0 (with
DATABASE_URL set for PostgreSQL). On the 2-core development box, with another process
busy on the other core:

| read | ORM ms | written out ms | ratio |
|--|--:|--:|--:|
| the key's look-up | 7.12 | 0.41 | 0.06 |
| the session | 3.20 | 0.44 | 0.14 |

Run again an hour later, the box slower: 10.70 → 0.52 ms (0.05) and 5.10 → 0.54 ms (0.11).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import pytest
from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Coalesce

from endpoint.keys import _lookup
from endpoint.models import GatewayKey
from rooms.secret_tokens import token_digest
from sessions.ledger.state_store import gateway_session_read
from sessions.models import Session, StateRecord, Task
from tests.endpoint.conftest import owner, setup, wire  # noqa: F401
from tests.endpoint.test_key_lookup_statement import orm_lookup

READS = 300


def _cpu_ms(read: Callable[[], object]) -> float:
    samples = []
    for _ in range(READS):
        started = time.thread_time()
        read()
        samples.append((time.thread_time() - started) * 1000)
    return statistics.median(samples)


def _orm_session(pk: int) -> Session:
    newest = StateRecord.objects.filter(session=OuterRef("pk")).order_by("-seq").values("seq")[:1]
    return (Session.objects.select_related("task", "task__room", "agent").defer("gateway_state")
            .annotate(state_seq=Coalesce(Subquery(newest), 0)).get(pk=pk))


@pytest.mark.bench
def test_the_reads_of_every_gateway_request_against_the_orms(setup):  # noqa: F811
    digest = token_digest(setup.openai_key)
    key = GatewayKey.objects.get(digest=digest)
    task = Task.objects.create(room=key.room, title="t", objective="o", created_by=key.created_by)
    session = Session.objects.create(task=task, agent=key.agent)
    reads = {"the key's look-up": (lambda: orm_lookup(digest), lambda: _lookup(digest, None)),
             "the session": (lambda: _orm_session(session.pk), lambda: gateway_session_read(session.pk))}
    print("\nread | ORM ms | written out ms | ratio (this thread's CPU, median of", READS, "reads)")
    with transaction.atomic():  # one connection throughout: the look-up closes its own outside one
        for name, (orm, written_out) in reads.items():
            assert orm().pk == written_out().pk
            before, now = _cpu_ms(orm), _cpu_ms(written_out)
            print(f"{name} | {before:.2f} | {now:.2f} | {now / before:.2f}")
