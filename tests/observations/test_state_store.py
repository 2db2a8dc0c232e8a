"""A session's gateway state in StateRecord rows: read back whole, old blobs still
read, and a save that did not commit leaves the last committed unit."""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection, transaction
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.test.utils import CaptureQueriesContext

from observations.gateway.journal import StateJournal
from observations.gateway.state import dump_state, load_state
from observations.models import Blob
from sessions.ledger.state_store import (
    StateRecordsBroken,
    gateway_session_read,
    gateway_state_read,
    gateway_state_save,
    session_gateway_state,
)
from sessions.ledger.sync import observations_sync
from sessions.models import Fold, LedgerEntry, Observation, Payload, Segment, Session, StateRecord
from tests.gateway.factories import (
    TOOLS,
    call,
    file_text,
    make_context,
    new_segment,
    prepare,
    read_input,
    shell_input,
)

pytestmark = pytest.mark.django_db


def unit(ctx, n: int) -> None:
    prepare(ctx)
    ctx.record_usage(round(ctx.estimate * 1.1))
    ctx.add_assistant(f"step {n}", (call(f"r{n}", path=f"f{n % 7}.py"), call(f"s{n}", "shell")))
    ctx.add_tool_result(read_input(f"r{n}", f"f{n % 7}.py", file_text(f"f{n % 7}.py", n // 20, 80)))
    ctx.add_tool_result(shell_input(f"s{n}", "pytest", f"{n} passed\n" * 30))


def save(session, journal, ctx):
    with transaction.atomic():
        record = journal.record(ctx)
        gateway_state_save(session=session, record=record)
        observations_sync(session=session, ctx=ctx, touched=record.touched)
    return record


def restored(state, ctx):
    texts = {o.source.sha256: o.source.text for o in ctx.observations}
    return load_state(state, texts=texts, model=ctx.model, system_prompt=ctx.system_prompt, tools=TOOLS,
                      budget=ctx.budget, policy=ctx.policy.name, calibration=ctx.calibration)


def test_the_rows_read_back_to_the_whole_state_and_old_records_go_with_each_snapshot(make_session):
    session = make_session()
    ctx = make_context(window=12_000, output_budget=1_000, segment_ratio=0.7)
    ctx.add_user("Fix it.", kind="task")
    journal, snapshots = StateJournal(), 0
    for n in range(120):
        unit(ctx, n)
        if n == 70:
            new_segment(ctx, "asked for")
        snapshots += save(session, journal, ctx).snapshot
        assert gateway_state_read(session).state == json.loads(json.dumps(dump_state(ctx)))
    assert snapshots >= 2 and len(ctx.folds) > 2
    first = StateRecord.objects.filter(session=session).order_by("seq").first()
    assert first.snapshot, "records before the newest snapshot are deleted with it"


SYNCED_ROWS = (Observation, Payload, LedgerEntry, Fold, Segment)


def rows(session) -> list[list[dict]]:
    return [sorted((_columns(row) for row in model.objects.filter(session=session)), key=repr)
            for model in SYNCED_ROWS]


def _columns(row) -> dict:
    return {f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields
            if f.attname not in ("id", "session_id", "created_at")}


def test_a_snapshot_written_for_its_size_syncs_only_the_rows_its_unit_touched(make_session):
    """A snapshot the deltas outgrew still knows its unit's delta: its rows are synced as
    any unit's, nothing read back, and they are the rows a whole sync writes."""
    by_unit, whole = make_session(), make_session(attempt=2)
    ctx = make_context(window=12_000, output_budget=1_000, segment_ratio=0.7)
    ctx.add_user("Fix it.", kind="task")
    journal, snapshots, whole_syncs = StateJournal(), 0, 0
    for n in range(120):
        unit(ctx, n)
        if n == 70:
            new_segment(ctx, "asked for")
        with transaction.atomic():
            record = journal.record(ctx)
            with CaptureQueriesContext(connection) as queries:
                observations_sync(session=by_unit, ctx=ctx, touched=record.touched)
            observations_sync(session=whole, ctx=ctx, touched=None)
        snapshots += record.snapshot
        if record.touched is None:
            whole_syncs += 1
        else:  # as a delta's unit: only a segment's new figures read its rows first
            reads = [q["sql"] for q in queries if q["sql"].startswith("SELECT")]
            assert all('FROM "observations_segment"' in sql for sql in reads) and len(reads) <= 1, reads
        assert rows(by_unit) == rows(whole)
    # Whole only where the journal could not follow the unit (the first record, the new segment, ...).
    assert snapshots - whole_syncs >= 2 and len(ctx.folds) > 2, (snapshots, whole_syncs)


def test_the_session_is_read_with_its_newest_record_as_the_orms_query_read_it(make_session):
    """gateway_session_read is a statement written out: it reads the session, its task,
    room and agent, and the newest record's seq, as the ORM's query did."""
    session = make_session()
    Session.objects.filter(pk=session.pk).update(gateway_state={"legacy": True}, runtime_state={"chat_cursor": 3})
    newest = StateRecord.objects.filter(session=OuterRef("pk")).order_by("-seq").values("seq")[:1]
    ctx = make_context(window=12_000, output_budget=1_000)
    ctx.add_user("Fix it.", kind="task")
    journal = StateJournal()
    for n in range(4):
        read = gateway_session_read(session.pk)
        orm = (Session.objects.select_related("task", "task__room", "agent").defer("gateway_state")
               .annotate(state_seq=Coalesce(Subquery(newest), 0)).get(pk=session.pk))
        assert read.state_seq == orm.state_seq == n
        for mine, theirs in [(read, orm), (read.task, orm.task), (read.task.room, orm.task.room),
                             (read.agent, orm.agent)]:
            assert fields(mine) == fields(theirs)
        assert read.get_deferred_fields() == {"gateway_state"}
        with CaptureQueriesContext(connection) as queries:
            assert read.gateway_state == {"legacy": True}  # read when used, as the ORM's defer does
        assert len(queries) == 1
        unit(ctx, n)
        save(session, journal, ctx)
    with pytest.raises(Session.DoesNotExist):
        gateway_session_read(session.pk + 1000)


def fields(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields
            if f.attname not in instance.get_deferred_fields()}


def test_a_save_that_did_not_commit_leaves_the_last_committed_unit(make_session):
    session = make_session()
    ctx = make_context(window=30_000, output_budget=1_000)
    ctx.add_user("Fix it.", kind="task")
    journal = StateJournal()
    for n in range(10):
        unit(ctx, n)
        save(session, journal, ctx)
    committed = dump_state(ctx)
    unit(ctx, 10)
    with pytest.raises(RuntimeError), transaction.atomic():  # the worker died mid-commit
        gateway_state_save(session=session, record=journal.record(ctx))
        raise RuntimeError
    stored = gateway_state_read(session)
    assert stored.state == committed
    # The next worker goes on from there, its records numbered after the committed ones.
    resumed = restored(stored.state, ctx)
    again = stored.journal_for(resumed)
    unit(resumed, 10)
    record = save(session, again, resumed)
    assert not record.snapshot and record.seq == stored.seq + 1
    assert gateway_state_read(session).state == dump_state(resumed)


def test_a_session_saved_as_one_blob_before_still_reads_and_its_next_save_is_a_snapshot(make_session):
    session = make_session()
    ctx = make_context(window=30_000, output_budget=1_000)
    ctx.add_user("Fix it.", kind="task")
    for n in range(8):
        unit(ctx, n)
    session.gateway_state = dump_state(ctx)
    session.save(update_fields=["gateway_state"])
    stored = gateway_state_read(session)
    assert stored.seq == 0 and stored.state == dump_state(ctx)
    resumed = restored(stored.state, ctx)
    unit(resumed, 8)
    record = save(session, stored.journal_for(resumed), resumed)
    assert record.snapshot
    session.gateway_state = {}  # what the worker's commit does with the superseded column
    session.save(update_fields=["gateway_state"])
    assert session_gateway_state(session) == dump_state(resumed)


def test_a_session_that_never_ran_has_no_state(make_session):
    session = make_session()
    assert gateway_state_read(session) is None and session_gateway_state(session) == {}


def test_a_units_sync_reads_no_row_and_writes_each_kind_of_row_once(make_session):
    session = make_session()
    ctx = make_context(window=30_000, output_budget=1_000)
    ctx.add_user("Fix it.", kind="task")
    journal = StateJournal()
    for n in range(30):
        unit(ctx, n)
        save(session, journal, ctx)
    unit(ctx, 30)
    with CaptureQueriesContext(connection) as queries:
        record = save(session, journal, ctx)
    assert not record.snapshot and ctx.folds
    sql = [q["sql"] for q in queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))]
    assert not [s for s in sql if s.startswith("SELECT")], sql
    # New and changed rows of a kind in one statement (INSERT … ON CONFLICT DO UPDATE).
    tables = [re.match(r'(?:INSERT (?:OR IGNORE )?INTO|UPDATE) "(\w+)"', s).group(1) for s in sql]
    assert "observations_observation" in tables and len(tables) == len(set(tables)), tables
    rows = list(Observation.objects.filter(session=session).order_by("seq"))
    assert [(r.seq, r.state, r.fold_number, r.blob_id) for r in rows] == [
        (o.obs_id, o.state.value, o.fold, o.source.sha256) for o in ctx.observations]
    assert {o.source.sha256 for o in ctx.observations} <= set(Blob.objects.values_list("sha256", flat=True))


def test_records_with_a_gap_or_without_their_snapshot_refuse_to_restore(make_session):
    session = make_session()
    ctx = make_context(window=12_000, output_budget=1_000)
    ctx.add_user("Fix it.", kind="task")
    journal = StateJournal()
    for n in range(4):
        unit(ctx, n)
        save(session, journal, ctx)
    StateRecord.objects.filter(session=session, seq=2).delete()
    with pytest.raises(StateRecordsBroken, match="missing"):
        gateway_state_read(session)
    StateRecord.objects.filter(session=session, snapshot=True).delete()
    with pytest.raises(StateRecordsBroken, match="no snapshot"):
        gateway_state_read(session)
