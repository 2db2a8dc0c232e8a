"""The step loop's write watch (in memory): a reading before a step's calls, one after
each call that may write, none after a read; each change recorded with its call, the
paths noted as the session's writes (so the next handoff names them); a turn's end
starts a new reading."""

from __future__ import annotations

from sessions.runtime.file_changes import FileChange
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
