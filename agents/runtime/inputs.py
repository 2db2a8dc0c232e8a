"""People's messages waiting for a session: steers, and chat that mentions its agent."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from agents.models import Session
from agents.runtime.loop import Input
from rooms.models import Message


def _steers(session: Session) -> QuerySet[Message]:
    # Steers for this session, or for its agent in this room that no session took yet.
    return Message.objects.filter(
        room_id=session.task.room_id, kind=Message.Kind.STEER, delivered_at__isnull=True
    ).filter(Q(session=session) | Q(session__isnull=True, agent_id=session.agent_id))


def _mentions(session: Session, chat_after: int) -> QuerySet[Message]:
    # Chat addressed to the agent ("@name"), posted since the session was created.
    return Message.objects.filter(
        room_id=session.task.room_id, kind=Message.Kind.CHAT, seq__gt=chat_after,
        created_at__gte=session.created_at, text__icontains=f"@{session.agent.name}",
    )


def pending_inputs(session: Session, *, chat_after: int) -> list[Input]:
    messages = (_steers(session) | _mentions(session, chat_after)).select_related("author").order_by("seq")
    return [
        Input(id=m.pk, seq=m.seq, kind=m.kind, author=m.author.get_username() if m.author else "someone", text=m.text)
        for m in messages
    ]


def has_pending_input(session: Session, *, chat_after: int) -> bool:
    return _steers(session).exists() or _mentions(session, chat_after).exists()
