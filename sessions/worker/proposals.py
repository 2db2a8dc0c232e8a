"""A session's work proposed upstream instead of merged, in a room that says so: its
branch goes to the upstream as a pull (merge) request, linked on the session, and the
room's main stays as it is."""

from __future__ import annotations

from rooms.repository.changes import session_change
from sessions.models import Session, SessionProposal
from sessions.worker.room_git import RoomGit


def session_propose(session: Session, room_git: RoomGit, branch: str) -> tuple[bool, str]:
    """The finish's outcome. A forge that cannot be reached leaves the work on its branch,
    said in the room and in the outcome."""
    room = session.task.room
    change = session_change(room_git.main_now(), branch, room.default_branch)
    if change is None or not change.files:
        return True, "no changes to propose"
    body = (f"{session.task.objective}\n\n---\nProposed by Atrium: session {session.pk} "
            f"({session.agent.name}, attempt {session.attempt}) of the task {session.task.title!r} in the room "
            f"{room.name!r}, /sessions/{session.pk}/ on the hub.")
    proposal = room_git.propose(branch=branch, title=session.task.title, body=body)
    if proposal is None:
        return True, f"not proposed upstream (the room says why); the work stays on {branch}"
    SessionProposal.objects.update_or_create(session=session, defaults={
        "number": proposal.number, "url": proposal.url, "state": proposal.state})
    return True, f"proposed {branch} upstream as {proposal.url}"
