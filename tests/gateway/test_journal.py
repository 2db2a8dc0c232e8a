"""A session saved as snapshots and deltas reads back exactly as the whole state would."""

from __future__ import annotations

import copy
import json

from observations.gateway import journal as journal_module
from observations.gateway.journal import StateJournal, encode, replay
from observations.gateway.messages import serialize_request
from observations.gateway.receipts import INTENT_UPDATE_FOLDED
from observations.gateway.state import dump_state, load_state
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


def unit(ctx, n: int) -> None:
    """One step of a varied session: re-reads, writes, payloads, steers, intent edits."""
    prepare(ctx)
    ctx.record_usage(round(ctx.estimate * 1.1))
    body = file_text(f"m{n % 4}.py", n, 30)
    ctx.add_assistant(f"step {n}", (
        call(f"r{n}", path=f"f{n % 9}.py"),
        call(f"w{n}", "shell", command=f"cat > m{n % 4}.py <<'EOF'\n{body}\nEOF\npytest -q"),
        call(f"e{n}", "write_file", path=f"lib/e{n % 6}.py", content=body),
    ))
    ctx.add_tool_result(read_input(f"r{n}", f"f{n % 9}.py", file_text(f"f{n % 9}.py", n // 27, 60)))
    ctx.add_tool_result(shell_input(f"w{n}", "pytest -q", f"{n} passed\n" * (n % 5 * 20)))
    ctx.add_tool_result(shell_input(f"e{n}", f"write lib/e{n % 6}.py", f"wrote lib/e{n % 6}.py"))
    if n % 17 == 0:
        ctx.add_person(kind="steer", author="alice", text=f"steer {n}: keep it small")
    if n % 41 == 7:
        ctx.refresh_intent(ctx.intent_file_text + f"\nAlso {n}: no new dependencies.")
    if n % 97 == 96:
        new_segment(ctx, "asked for")


def restore(state, ctx):
    texts = {o.source.sha256: o.source.text for o in ctx.observations}
    return load_state(json.loads(json.dumps(state)), texts=texts, model=ctx.model, system_prompt=ctx.system_prompt,
                      tools=TOOLS, budget=ctx.budget, policy=ctx.policy.name,
                      calibration=copy.deepcopy(ctx.calibration))  # its own: each run learns


def test_hundreds_of_units_replay_to_the_whole_state_after_every_unit():
    ctx = make_context(window=14_000, output_budget=1_000, segment_ratio=0.7)
    ctx.add_user("Fix it.", kind="task")
    journal = StateJournal()
    records, deltas, folded_updates = [], 0, 0
    for n in range(400):
        unit(ctx, n)
        record = journal.record(ctx)
        deltas += not record.snapshot
        folded_updates += any(e.kind == "intent_update" and e.text == INTENT_UPDATE_FOLDED for e in ctx.entries)
        assert record.text == encode(record.data) and record.size == len(record.text.encode())
        # What a database would hold: JSON, from the newest snapshot on.
        stored = json.loads(encode(record.data))
        records = [stored] if record.snapshot else [*records, stored]
        assert replay(records[0], records[1:]) == json.loads(encode(dump_state(ctx))), f"unit {n}"
    assert ctx.segment > 3 and len(ctx.folds) > 5 and ctx.payloads and ctx.decisions.items
    assert folded_updates and deltas > 300
    assert any(path.startswith("lib/") and note.written for path, note in ctx.notes.files.items())


def test_deltas_carry_what_the_unit_changed_not_the_history():
    ctx = make_context(window=400_000, output_budget=1_000)
    ctx.add_user("Fix it.", kind="task")
    journal = StateJournal()
    sizes = []
    for n in range(300):
        unit(ctx, n % 96)  # no segment starts: one growing segment
        record = journal.record(ctx)
        if not record.snapshot:
            sizes.append(record.size)
    whole = len(encode(dump_state(ctx)))
    assert max(sizes[-50:]) < whole / 20
    assert max(sizes[-50:]) < 3 * max(sizes[:50])


def keep(records: list, record) -> list:
    """The rows a database holds: from the newest snapshot on, as JSON."""
    stored = json.loads(encode(record.data))
    return [stored] if record.snapshot else [*records, stored]


def test_a_restored_session_journals_on_from_its_restored_context():
    ctx = make_context(window=14_000, output_budget=1_000, segment_ratio=0.7)
    ctx.add_user("Fix it.", kind="task")
    journal, records = StateJournal(), []
    for n in range(70):
        unit(ctx, n)
        records = keep(records, journal.record(ctx))
    resumed = restore(replay(records[0], records[1:]), ctx)
    again = StateJournal()
    again.prime(resumed, seq=len(records), snapshot_bytes=len(encode(records[0])), since_snapshot=0)
    deltas = 0
    for n in range(70, 140):
        unit(ctx, n)
        unit(resumed, n)
        record = again.record(resumed)
        deltas += not record.snapshot
        records = keep(records, record)
        assert serialize_request(ctx.request()) == serialize_request(resumed.request())
    assert deltas > 40
    assert dump_state(resumed) == dump_state(ctx)
    assert replay(records[0], records[1:]) == json.loads(encode(dump_state(resumed)))


def test_a_snapshot_is_taken_once_the_deltas_outweigh_the_last_one(monkeypatch):
    monkeypatch.setattr(journal_module, "MIN_SNAPSHOT_EVERY_BYTES", 0)
    ctx = make_context(window=400_000, output_budget=1_000)
    ctx.add_user("Fix it.", kind="task")
    journal = StateJournal()
    kinds = []
    for n in range(200):
        unit(ctx, n % 96)
        kinds.append(journal.record(ctx).snapshot)
    snapshots = [i for i, snapshot in enumerate(kinds) if snapshot]
    assert snapshots[0] == 0 and len(snapshots) > 3
    # Further apart as the state grows: the bytes written per unit stay flat.
    gaps = [b - a for a, b in zip(snapshots, snapshots[1:], strict=False)]
    assert gaps[-1] >= gaps[0]
