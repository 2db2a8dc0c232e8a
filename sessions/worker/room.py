"""The room as room_status sees it (agents/tools/room.py), read from the database (what
each session changed: its record of changes) and the room's repository (main's
commits); its notes kept on the session row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.tools.room import MergeLine, RoomSnapshot, SessionLine, TaskLine
from rooms.repository.activity import (
    branch_tip,
    fork_point,
    main_commits_since,
)
from rooms.repository.git import GitError
from sessions.models import Session
from sessions.selectors import room_live_sessions, room_open_tasks, sessions_files_touched
from sessions.worker.room_git import RoomGit


def session_base(session: Session, repo: Path, target: str) -> str:
    """The commit of main the session's worktree was made from (recorded when it was
    made; for sessions from before that, where its branch left main)."""
    if session.base_commit:
        return session.base_commit
    if not session.branch:
        return ""
    try:
        return fork_point(repo, session.branch, target)
    except GitError:
        return ""


class DatabaseRoomView:
    def __init__(self, session: Session, *, owner: str, room_git: RoomGit | None = None) -> None:
        self.session_id, self.task_id, self.owner = session.pk, session.task_id, owner
        room = session.task.room
        self.room_id, self.target = room.pk, room.default_branch
        self.room_git = room_git or RoomGit(room)

    def snapshot(self) -> RoomSnapshot:
        me = Session.objects.without_state().get(pk=self.session_id)
        repo = self.room_git.main_now()
        base = session_base(me, repo, self.target)
        merges = main_commits_since(repo, base, self.target) if base else ()
        live = room_live_sessions(self.room_id, besides=self.session_id)
        touched = sessions_files_touched([s.pk for s in live])
        return RoomSnapshot(
            session_id=self.session_id, task_id=self.task_id, main=branch_tip(repo, self.target),
            tasks=tuple(TaskLine(t.pk, t.title) for t in room_open_tasks(self.room_id)),
            sessions=tuple(
                SessionLine(id=s.pk, agent=s.agent.name, task_id=s.task_id, task=s.task.title, state=s.state,
                            files=tuple(touched.get(s.pk, ())))
                for s in live
            ),
            merges=tuple(MergeLine(sha=m.sha, subject=m.subject, files=m.files) for m in merges),
        )

    def load_notes(self) -> dict[str, Any]:
        return Session.objects.filter(pk=self.session_id).values_list("room_status_notes", flat=True).first() or {}

    def save_notes(self, notes: dict[str, Any]) -> None:
        # Only while this worker holds the session: a worker that lost it saves nothing.
        Session.objects.filter(pk=self.session_id, lease_owner=self.owner).update(room_status_notes=notes)
