"""The step loop's write watch (in memory): a reading before a step's calls, one after
each call that may write, none after a read; each change recorded with its call, the
paths noted as the session's writes (so the next handoff names them); a turn's end
starts a new reading."""

from __future__ import annotations

from agents.tools.outcome import ToolOutcome
from sessions.runtime.file_changes import FileChange
from sessions.runtime.loop import StepLoop
from sessions.runtime.loop_state import RuntimeState
from tests.gateway.factories import make_context
from tests.sessions.runtime.test_loop import FakeHost, run, turn


def test_a_commands_changes_are_recorded_with_it_and_noted_as_writes():
    host = FakeHost(turns=[turn("", ("c1", "read_file", {"path": "app.py"}), ("c2", "shell", {"command": "sed -i"})),
                           turn("done")],
                    file_reads=[[FileChange("app.py", "modified", "s1"),
                                 FileChange("new.py", "renamed", "s2", old_path="old.py")]])
    ctx = make_context(window=60_000)
    loop, _ = run(host, ctx=ctx)
    changed = [payload for kind, payload in host.events if kind == "file.changed"]
    assert [(c["call_id"], c["path"], c["kind"], c["old_path"]) for c in changed] == [
        ("c2", "app.py", "modified", ""), ("c2", "new.py", "renamed", "old.py")]
    assert host.readings == 2  # before the calls, after the shell call: none after the read
    shell_result = next(obs for obs in ctx.observations if obs.call_id == "c2")
    assert shell_result.source.written == ("app.py", "new.py", "old.py")
    assert {path for path, note in ctx.notes.files.items() if note.written} == {"app.py", "new.py", "old.py"}
    assert loop.state.files_reading is None  # the turn ended: the hub's own moves are nobody's change


def test_a_session_without_changes_records_none():
    host = FakeHost(turns=[turn("", ("c1", "shell", {"command": "ls"})), turn("done")])
    run(host)
    assert "file.changed" not in host.kinds()


def test_a_read_before_a_command_changed_its_file_is_marked_stale_and_kept_so_by_the_state():
    from observations.gateway.journal import StateJournal
    from observations.gateway.state import dump_state

    class Reads(FakeHost):
        def execute(self, call):
            if call.name != "read_file":
                return super().execute(call)
            return ToolOutcome(call.id, call.name, dict(call.arguments), "x = 1\n", path="app.py", line_start=1,
                               line_end=1, range_sha256="r1")

    host = Reads(turns=[turn("", ("c1", "read_file", {"path": "app.py"}), ("c2", "shell", {"command": "sed -i"})),
                        turn("done")],
                 file_reads=[[FileChange("app.py", "modified", "s1")]])
    ctx = make_context(window=60_000)
    journal = StateJournal()
    journal.record(ctx)
    loop = StepLoop(ctx, RuntimeState(), host)
    loop.advance()  # the model's reply: the calls
    loop.advance()  # the read
    journal.record(ctx)
    loop.advance()  # the command that changed the file
    record = journal.record(ctx)
    entry = next(iter(ctx.ledger))
    assert entry.range.path == "app.py" and entry.changed_step == ctx.step
    assert record.touched["ledger"] == [0]  # the mark goes with the unit's records
    assert dump_state(ctx)["ledger"][0]["changed_step"] == ctx.step
