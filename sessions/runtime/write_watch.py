"""The step loop's eye on the worktree: after every call that may write (a command, a
file tool, a wait while jobs run) and when a job ends, which files changed, by whatever
means (sessions/runtime/file_changes.py). Each change is a ``file.changed`` event of the
session, with the call that made it: the record everything asking "what did this
session change?" reads; the ranges the model read of those files before are marked
stale in its ledger. The reading it compares with is kept in the loop's state; the
hub's own moves of the worktree (the turn's end: the check, the commit, the merge)
start a new reading rather than count as the agent's."""

from __future__ import annotations

from agents.tools import registry
from observations.gateway.context import SessionContext
from sessions.runtime.file_changes import FileChange, Reading
from sessions.runtime.loop_state import RuntimeState
from sessions.runtime.ports import WorktreePort

FILE_CHANGED = "file.changed"


class WriteWatch:
    def __init__(self, ctx: SessionContext, state: RuntimeState, host: WorktreePort) -> None:
        self.ctx, self.state, self.host = ctx, state, host

    def calls_begin(self) -> None:
        """Before a step's calls run: a reading to compare them with, if none is kept."""
        if self.state.files_reading is None:
            self._read("")

    def after_call(self, call_id: str, tool: str) -> tuple[str, ...]:
        """The paths the call changed (a rename's both), each recorded with it."""
        if tool in registry.READ_ONLY and tool not in registry.WAITS:
            return ()
        return tuple(dict.fromkeys(path for change in self._read(call_id)
                                   for path in (change.path, change.old_path) if path))

    def after_jobs(self, handles: list[str]) -> None:
        """Jobs ended: what they changed, noted as the session's writes."""
        if not handles:
            return
        changes = self._read(f"job {', '.join(handles)}")
        self.ctx.notes.wrote([path for change in changes for path in (change.path, change.old_path) if path],
                             self.ctx.step)

    def forget(self) -> None:
        """The hub moves the worktree now: the next reading starts afresh."""
        self.state.files_reading = None

    def _read(self, call_id: str) -> list[FileChange]:
        before = Reading.from_dict(self.state.files_reading)
        changes, reading = self.host.file_changes(before)
        self.state.files_reading = reading.to_dict()
        for change in changes:
            self.host.emit(FILE_CHANGED, {"step": self.ctx.step, "call_id": call_id, **change.to_dict()})
        self.ctx.ledger.file_changed({path for change in changes for path in (change.path, change.old_path) if path},
                                     self.ctx.step)
        return changes
