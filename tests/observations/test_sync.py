"""A session's gateway state persisted to rows."""

from __future__ import annotations

import pytest

from observations import calibration
from observations.blobs import blob_text
from observations.calibration import calibration_load, calibration_save
from observations.models import Blob, Calibration
from sessions.ledger.sync import observations_sync
from sessions.models import Fold, LedgerEntry, Observation
from tests.gateway.factories import call, file_text, make_context, read_input


def run(ctx, steps: int, *, reread_every: int = 0, first: int = 0):
    for n in range(first, first + steps):
        ctx.prepare()
        path = "src/a.py" if reread_every and n % reread_every == 0 else f"f{n}.py"
        ctx.add_assistant(f"s{n}", (call(f"c{n}", path=path),))
        ctx.add_tool_result(read_input(f"c{n}", path, file_text(path, 0, 150)))
    ctx.prepare()


@pytest.mark.django_db
def test_observations_ledger_and_folds_match_the_context(make_session):
    session = make_session()
    ctx = make_context(window=30_000, output_budget=1_000)
    run(ctx, 10, reread_every=3)
    observations_sync(session=session, ctx=ctx)
    run(ctx, 30, reread_every=4, first=10)
    observations_sync(session=session, ctx=ctx)
    observations_sync(session=session, ctx=ctx)  # idempotent

    rows = list(Observation.objects.filter(session=session))
    assert [r.seq for r in rows] == [o.obs_id for o in ctx.observations]
    assert [r.state for r in rows] == [o.state.value for o in ctx.observations]
    assert [r.fold_number for r in rows] == [o.fold for o in ctx.observations]
    assert {r.served for r in rows} >= {"text", "note"}
    assert Fold.objects.filter(session=session).count() == len(ctx.folds) > 0
    ledger = {(e.path, e.in_context) for e in LedgerEntry.objects.filter(session=session)}
    assert ledger == {(e.range.path, e.in_context) for e in ctx.ledger}


@pytest.mark.django_db
def test_sessions_of_a_room_share_a_blob_but_a_retry_still_gets_the_full_text(make_session, room):
    first, retry = make_session(1), make_session(2)
    source = read_input("c1", "src/a.py", file_text("src/a.py", 0, 50))
    ctx = make_context()
    ctx.add_assistant("read", (call("c1", path="src/a.py"),))
    ctx.add_tool_result(source)
    observations_sync(session=first, ctx=ctx)
    # The retry's ledger is empty: the stored text is served whole, never as a receipt.
    retry_ctx = make_context()
    retry_ctx.add_assistant("read", (call("c1", path="src/a.py"),))
    obs = retry_ctx.add_tool_result(source)
    assert obs.alias_of is None and retry_ctx.prepare().request.messages[-1].text == source.text
    observations_sync(session=retry, ctx=retry_ctx)
    assert Observation.objects.filter(blob_id=source.sha256).count() == 2
    assert Blob.objects.filter(sha256=source.sha256).count() == 1
    changed = read_input("c2", "src/a.py", file_text("src/a.py", 1, 50))
    retry_ctx.add_assistant("read", (call("c2", path="src/a.py"),))
    retry_ctx.add_tool_result(changed)
    observations_sync(session=retry, ctx=retry_ctx)
    assert blob_text(Blob.objects.get(sha256=changed.sha256)) == changed.text


@pytest.mark.django_db
def test_calibration_survives_a_restart_and_is_per_model():
    state = calibration_load("openai:gpt-x")
    state.learn(reported=1_500, estimated=1_000)
    calibration_save(state)
    assert calibration_load("openai:gpt-x").ratio == pytest.approx(1.5)
    assert calibration_load("anthropic:claude-y").ratio == 1.0


@pytest.mark.django_db
def test_a_process_that_writes_its_calibration_often_still_reads_another_processes_every_30_s(
        monkeypatch, django_capture_on_commit_callbacks):
    now = [1000.0]
    monkeypatch.setattr(calibration.time, "monotonic", lambda: now[0])
    state = calibration_load("openai:gpt-z")  # read at 1000
    now[0] += 10
    state.learn(reported=1_500, estimated=1_000)
    with django_capture_on_commit_callbacks(execute=True):
        calibration_save(state)  # written at 1010: as fresh as its read at 1000
    Calibration.objects.filter(model="openai:gpt-z").update(ratio=2.0, samples=50)  # another process
    now[0] += 10
    assert calibration_load("openai:gpt-z").ratio == pytest.approx(1.5)  # kept
    now[0] += calibration.FRESH_FOR / 2  # 35 s after the read, 25 after the write
    assert (calibration_load("openai:gpt-z").ratio, calibration_load("openai:gpt-z").samples) == (2.0, 50)
