"""`room_status`: what else goes on in the agent's room, and on later calls only what changed.

The room is seen through a ``RoomView`` the runtime passes in (sessions/worker/room.py
reads the database and the room's repository): the open tasks, the other live sessions
with the files each has changed so far, and what merged into main since this session's
worktree was made. The view also keeps the notes of the session's last call, so a
second call (in this process or after a resume elsewhere) sends only the changes; the
comparison and the wording are here, plain Python.

The notes remember the call id that wrote them: the same call run again after a crash
compares with what the call before it saw, so re-running it is harmless.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Protocol

from .outcome import Result

MAX_FILES = 25  # per session or merge; the rest is counted
MAX_MERGES = 20  # the newest; the rest is counted
MAX_LISTED = 30  # open tasks, and live sessions, in a full status; the rest is counted


@dataclass(frozen=True, slots=True)
class TaskLine:
    id: int
    title: str


@dataclass(frozen=True, slots=True)
class SessionLine:
    id: int
    agent: str
    task_id: int
    task: str
    state: str
    files: tuple[str, ...] = ()

    @property
    def who(self) -> str:
        return f"session {self.id} ({self.agent} on task {self.task_id} {self.task!r})"


@dataclass(frozen=True, slots=True)
class MergeLine:
    sha: str
    subject: str
    files: tuple[str, ...] = ()

    @property
    def line(self) -> str:
        return f"{self.sha[:10]} {self.subject}" + (f": {_files(self.files)}" if self.files else "")


@dataclass(frozen=True, slots=True)
class RoomSnapshot:
    """The room as one session sees it; ``sessions`` are the others, live ones only."""

    session_id: int
    task_id: int
    main: str  # the main branch's commit now
    tasks: tuple[TaskLine, ...] = ()
    sessions: tuple[SessionLine, ...] = ()
    merges: tuple[MergeLine, ...] = ()  # into main since this session began, oldest first

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RoomSnapshot:
        return cls(
            session_id=data["session_id"], task_id=data["task_id"], main=data["main"],
            tasks=tuple(TaskLine(**t) for t in data.get("tasks", ())),
            sessions=tuple(SessionLine(**{**s, "files": tuple(s.get("files", ()))}) for s in data.get("sessions", ())),
            merges=tuple(MergeLine(**{**m, "files": tuple(m.get("files", ()))}) for m in data.get("merges", ())),
        )


class RoomView(Protocol):
    def snapshot(self) -> RoomSnapshot: ...
    def load_notes(self) -> dict[str, Any]: ...  # {} before the first call
    def save_notes(self, notes: dict[str, Any]) -> None: ...


@dataclass(frozen=True, slots=True)
class RoomChanges:
    tasks_opened: tuple[TaskLine, ...] = ()
    tasks_closed: tuple[TaskLine, ...] = ()
    sessions_started: tuple[SessionLine, ...] = ()
    sessions_ended: tuple[SessionLine, ...] = ()
    states: tuple[tuple[SessionLine, str], ...] = ()  # (session now, its state before)
    files_added: tuple[tuple[SessionLine, tuple[str, ...]], ...] = ()
    files_dropped: tuple[tuple[SessionLine, tuple[str, ...]], ...] = ()
    merges: tuple[MergeLine, ...] = ()

    @property
    def empty(self) -> bool:
        return not any((self.tasks_opened, self.tasks_closed, self.sessions_started, self.sessions_ended,
                        self.states, self.files_added, self.files_dropped, self.merges))


def room_changes(previous: RoomSnapshot, current: RoomSnapshot) -> RoomChanges:
    """What differs between two snapshots of the same session's room."""
    before_tasks = {t.id: t for t in previous.tasks}
    now_tasks = {t.id: t for t in current.tasks}
    before = {s.id: s for s in previous.sessions}
    now = {s.id: s for s in current.sessions}
    states, added, dropped = [], [], []
    for sid, session in now.items():
        old = before.get(sid)
        if old is None:
            continue
        if old.state != session.state:
            states.append((session, old.state))
        if new_files := tuple(f for f in session.files if f not in old.files):
            added.append((session, new_files))
        if gone := tuple(f for f in old.files if f not in session.files):
            dropped.append((session, gone))
    seen = {m.sha for m in previous.merges}
    return RoomChanges(
        tasks_opened=tuple(t for i, t in now_tasks.items() if i not in before_tasks),
        tasks_closed=tuple(t for i, t in before_tasks.items() if i not in now_tasks),
        sessions_started=tuple(s for i, s in now.items() if i not in before),
        sessions_ended=tuple(s for i, s in before.items() if i not in now),
        states=tuple(states), files_added=tuple(added), files_dropped=tuple(dropped),
        merges=tuple(m for m in current.merges if m.sha not in seen),
    )


def _files(files: tuple[str, ...]) -> str:
    shown = ", ".join(files[:MAX_FILES])
    return shown + (f" (+{len(files) - MAX_FILES} more)" if len(files) > MAX_FILES else "")


def _task(task: TaskLine, yours: int) -> str:
    return f"task {task.id} {task.title!r}" + (" (yours)" if task.id == yours else "")


def _session(session: SessionLine) -> str:
    changed = f"; changed: {_files(session.files)}" if session.files else "; no files changed yet"
    return f"{session.who}: {session.state}{changed}"


def _merges(merges: tuple[MergeLine, ...]) -> list[str]:
    shown = merges[-MAX_MERGES:]
    lines = [f"- {m.line}" for m in shown]
    if len(merges) > len(shown):
        lines.insert(0, f"- ({len(merges) - len(shown)} earlier merges not shown)")
    return lines


def _listed(lines: list[str], what: str) -> list[str]:
    if not lines:
        return ["- none"]
    if len(lines) <= MAX_LISTED:
        return lines
    return [*lines[:MAX_LISTED], f"- ({len(lines) - MAX_LISTED} more {what} not shown)"]


def render_full(snapshot: RoomSnapshot) -> str:
    lines = [f"Room status (main at {snapshot.main[:10]}; you are session {snapshot.session_id}).",
             f"Open tasks ({len(snapshot.tasks)}):"]
    lines += _listed([f"- {_task(t, snapshot.task_id)}" for t in snapshot.tasks], "open tasks")
    lines.append(f"Other live sessions ({len(snapshot.sessions)}):")
    lines += _listed([f"- {_session(s)}" for s in snapshot.sessions], "live sessions")
    lines.append(f"Merged into main since you started ({len(snapshot.merges)}):")
    lines += _merges(snapshot.merges) or ["- nothing"]
    lines.append("A later room_status sends only what changed since this one.")
    return "\n".join(lines)


def _summary(snapshot: RoomSnapshot) -> str:
    return (f"{len(snapshot.tasks)} open task(s), {len(snapshot.sessions)} other live session(s), "
            f"{len(snapshot.merges)} merge(s) into main since you started")


def render_changes(changes: RoomChanges, current: RoomSnapshot) -> str:
    if changes.empty:
        return (f"Room status: nothing changed since your last room_status (main at {current.main[:10]}; "
                f"{_summary(current)}).")
    lines = [f"Room status: what changed since your last room_status (main at {current.main[:10]}):"]
    lines += [f"- new task: {_task(t, current.task_id)}" for t in changes.tasks_opened]
    lines += [f"- task closed: {_task(t, current.task_id)}" for t in changes.tasks_closed]
    lines += [f"- new {_session(s)}" for s in changes.sessions_started]
    lines += [f"- ended: {s.who}" for s in changes.sessions_ended]
    lines += [f"- {s.who}: {old} -> {s.state}" for s, old in changes.states]
    lines += [f"- {s.who} also changed: {_files(f)}" for s, f in changes.files_added]
    lines += [f"- {s.who} no longer changes: {_files(f)}" for s, f in changes.files_dropped]
    lines += [f"- merged into main: {m.line}" for m in changes.merges[-MAX_MERGES:]]
    lines.append(f"The rest is as your last room_status said (now {_summary(current)}).")
    return "\n".join(lines)


def room_status(view: RoomView, *, call_id: str) -> Result:
    notes = view.load_notes() or {}
    # The same call again (a crash before its outcome was recorded) compares with what
    # the call before it saw, not with its own first attempt.
    earlier = notes.get("previous") if notes.get("call_id") == call_id else notes.get("snapshot")
    current = view.snapshot()
    view.save_notes({"call_id": call_id, "snapshot": current.to_dict(), "previous": earlier})
    if not earlier:
        return Result(text=render_full(current), purpose="room_status")
    previous = RoomSnapshot.from_dict(earlier)
    return Result(text=render_changes(room_changes(previous, current), current), purpose="room_status (changes)")
