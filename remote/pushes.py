"""Who may read or push a room's repository over the git remote, and what the room hears
when a push moved its branches. Read fresh on every request: a person removed from a
room, made a viewer or deactivated loses what the role gave at their next request, and a
worker (``rooms.worker_tokens``) what its session's lease gave once it is not its own."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.utils import timezone

from remote.tokens import token_user
from rooms.checks import may_act
from rooms.models import Room
from rooms.repository.git import git
from rooms.repository.pushes import ZERO_OID, RefUpdate
from rooms.repository.worktrees import session_branch
from rooms.selectors import membership_of
from rooms.services import repository_pushed
from rooms.worker_tokens import WorkerToken, worker_token_read
from sessions.events import session_event_append
from sessions.models import Session
from sessions.runtime.claims import held

NOT_FOUND = "Repository not found."


@dataclass(frozen=True)
class Access:
    """A git request's answer before git runs: a refusal (status and sentence) or the
    person and room it may go on with."""

    status: int = 200
    refusal: str = ""
    user: AbstractBaseUser | None = None
    room: Room | None = None
    worker: WorkerToken | None = None  # a worker's request: its session's branch is all it pushes

    @property
    def repo(self) -> Path:
        return Path(self.room.repo_path)

    @property
    def who(self) -> str:
        return f"worker of session {self.worker.session_id}" if self.worker else self.user.get_username()

    @property
    def only_ref(self) -> str:
        return f"refs/heads/{session_branch(self.worker.session_id)}" if self.worker else ""


def repository_access(token: str | None, slug: str, *, push: bool) -> Access:
    """Members and owners read and push, viewers read; a worker holding a session's lease
    reads its room and pushes its branch; anyone else, the room is not there."""
    try:
        if (worker := worker_token_read(token)) is not None:
            return _worker_access(worker, slug)
        user = token_user(token)
        if user is None:
            return Access(status=401, refusal="A personal access token is needed (make one on your profile page); "
                                              "give it as the password.")
        room = Room.objects.filter(slug=slug).first()
        membership = membership_of(room, user) if room else None
        if membership is None:
            return Access(status=404, refusal=NOT_FOUND)
        if push and not may_act(membership):
            return Access(status=403, refusal=f"You are a viewer of {room.name}: you may clone and pull, "
                                              "not push.")
        return Access(user=user, room=room)
    finally:
        if not connection.in_atomic_block:  # a long clone holds no database connection
            connection.close()


def _worker_access(worker: WorkerToken, slug: str) -> Access:
    session = _held_session(worker)
    if session is None:
        return Access(status=401, refusal=worker_refusal(worker))
    if session.task.room_id != worker.room_id or session.task.room.slug != slug:
        return Access(status=404, refusal=NOT_FOUND)
    return Access(room=session.task.room, worker=worker)


def worker_still_holds(worker: WorkerToken) -> bool:
    """Asked again once a push has the room's lock: the lease may have moved meanwhile."""
    try:
        return _held_session(worker) is not None
    finally:
        if not connection.in_atomic_block:
            connection.close()


def worker_refusal(worker: WorkerToken) -> str:
    return f"This worker does not hold session {worker.session_id} any more."


def _held_session(worker: WorkerToken) -> Session | None:
    session = Session.objects.without_state().select_related("task__room").filter(pk=worker.session_id).first()
    if session is None or session.lease_owner != worker.owner or not held(
            lease_owner=session.lease_owner, lease_expires_at=session.lease_expires_at, now=timezone.now()):
        return None
    return session


def tell_room(access: Access, commands: list[str]) -> None:
    """The room's message for what the push moved: each ref it named that now holds what
    it asked for (nothing when git refused it all). A worker's push of its session's
    branch is the session's own news: an event of the session (``branch.pushed``)."""
    now = refs_of(access.repo)
    moved = []
    for command in commands:
        update = RefUpdate.parse(command)
        if now.get(update.ref) == (None if update.deletes else update.new):
            moved.append((update.ref, None if update.old == ZERO_OID else update.old,
                          None if update.deletes else update.new))
    if moved and access.worker is not None:
        with transaction.atomic():
            if session := Session.objects.without_state().filter(pk=access.worker.session_id).first():
                for ref, old, new in moved:
                    session_event_append(session, "branch.pushed", {"ref": ref, "old": old, "new": new})
    elif moved:
        repository_pushed(room=access.room, actor=access.user, moved=moved)


def refs_of(repo: Path) -> dict[str, str]:
    """Every branch and tag of the repository, by name, with what it names."""
    listed = git("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags", cwd=repo)
    return dict(line.rsplit(" ", 1) for line in listed.splitlines() if line)
