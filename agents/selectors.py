"""Reads for tasks and sessions. ``access_session`` is the only way a view or consumer
loads a session for a user: it checks membership of the session's room."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import Http404

from agents.models import Session
from rooms.selectors import RoomAccess, access_room_by_id


@dataclass(frozen=True)
class SessionAccess:
    session: Session
    room_access: RoomAccess

    @property
    def can_control(self) -> bool:
        """Steer, approve, cancel: owners and members; viewers only look."""
        return self.room_access.can_post


def access_session(user: AbstractBaseUser | AnonymousUser, session_id: int) -> SessionAccess:
    session = Session.objects.select_related("task", "task__room", "agent").filter(pk=session_id).first()
    if session is None:
        raise Http404("No such session.")
    return SessionAccess(session=session, room_access=access_room_by_id(user, session.task.room_id))
