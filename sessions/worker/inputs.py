"""Messages waiting for a session: people's steers and chat that mentions its agent, and
other agents' posts that mention it (sessions.services.talk.agent_mentions_route)."""

from __future__ import annotations

from django.db import connection
from django.db.models import Q, QuerySet

from rooms.models import Message
from sessions.models import AgentMention, Session, SessionMessage
from sessions.runtime.delivery import Input
from sessions.runtime.mentions import mentions


def _steers(session: Session) -> QuerySet[Message]:
    # Steers for this session, or for its agent in this room that no session took yet.
    return Message.objects.filter(
        room_id=session.task.room_id, kind=Message.Kind.STEER, delivered_at__isnull=True
    ).filter(Q(session_link__session=session) | Q(session_link__isnull=True, agent_id=session.agent_id))


def _mentions(session: Session, chat_after: int) -> list[Message]:
    """Chat addressed to the agent (`@name`, not `@namesake`) since the session was created."""
    name = session.agent.name
    return [m for m in _chat_naming(session, chat_after).select_related("author") if mentions(m.text, name)]


def _chat_naming(session: Session, chat_after: int) -> QuerySet[Message]:
    return Message.objects.filter(room_id=session.task.room_id, kind=Message.Kind.CHAT, seq__gt=chat_after,
                                  created_at__gte=session.created_at, text__icontains=f"@{session.agent.name}")


def _agent_mentions(session: Session) -> QuerySet[AgentMention]:
    return AgentMention.objects.filter(session=session, state=AgentMention.State.PENDING)


def pending_inputs(session: Session, *, chat_after: int) -> list[Input]:
    """What the next boundary delivers. A steer sent to the agent (not to a session) is
    bound to this session first, with a compare-and-swap, so two sessions of the same
    agent never both act on it."""
    if not any(_waiting(session, chat_after)):
        return []  # the usual boundary: one query, not four
    unbound = _steers(session).filter(session_link__isnull=True).values_list("pk", flat=True)
    # The message is the link's key: a steer another session bound first is skipped.
    SessionMessage.objects.bulk_create([SessionMessage(message_id=pk, session=session) for pk in unbound],
                                       ignore_conflicts=True)
    steers = list(_steers(session).filter(session_link__session=session).select_related("author"))
    people = [
        Input(id=m.pk, seq=m.seq, kind=m.kind, author=m.author.get_username() if m.author else "someone", text=m.text,
              replaces=tuple(n for n in m.replaces if isinstance(n, int)) if m.kind == Message.Kind.STEER else ())
        for m in steers + _mentions(session, chat_after)
    ]
    agents = [
        Input(id=m.message_id, seq=m.message.seq, kind="agent", author=m.sender.name, text=m.message.text)
        for m in _agent_mentions(session).select_related("message", "sender")
    ]
    return sorted(people + agents, key=lambda i: i.seq)


def has_pending_input(session: Session, *, chat_after: int) -> bool:
    steers, agents, chat = _waiting(session, chat_after)
    return steers or agents or (chat and bool(_mentions(session, chat_after)))


def _waiting(session: Session, chat_after: int) -> tuple[bool, bool, bool]:
    """Whether steers, agents' mentions and chat naming the agent are waiting, in one
    query (chat that names the agent only as the start of a longer name counts here;
    ``_mentions`` tells them apart). Asked before every step and every gateway request,
    so it is written out: the ORM's three ``Exists`` cost some 2 ms to build and compile
    each time, the statement itself a fraction of that. It asks what ``_steers``,
    ``_agent_mentions`` and ``_chat_naming`` do (a test holds them to it)."""
    params = [session.task.room_id, Message.Kind.STEER, session.pk, session.agent_id,
              session.pk, AgentMention.State.PENDING,
              session.task.room_id, Message.Kind.CHAT, chat_after,
              connection.ops.adapt_datetimefield_value(session.created_at),
              _containing(f"@{session.agent.name}"), session.pk]
    with connection.cursor() as cursor:
        cursor.execute(_WAITING, params)
        found = cursor.fetchone()
    return tuple(bool(one) for one in found) if found else (False, False, False)  # a session deleted


def _containing(text: str) -> str:
    """A LIKE pattern (escaped with !, the same on every backend) of text that holds ``text``."""
    return "%" + text.replace("!", "!!").replace("%", "!%").replace("_", "!_") + "%"


# icontains as Django writes it for PostgreSQL (SQLite's LIKE ignores ASCII case anyway).
_WAITING = """SELECT
 EXISTS (SELECT 1 FROM rooms_message m LEFT JOIN agent_sessions_sessionmessage l ON l.message_id = m.id
         WHERE m.room_id = %s AND m.kind = %s AND m.delivered_at IS NULL
           AND (l.session_id = %s OR (l.message_id IS NULL AND m.agent_id = %s))),
 EXISTS (SELECT 1 FROM agents_agentmention a WHERE a.session_id = %s AND a.state = %s),
 EXISTS (SELECT 1 FROM rooms_message m WHERE m.room_id = %s AND m.kind = %s AND m.seq > %s
           AND m.created_at >= %s AND UPPER(m.text) LIKE UPPER(%s) ESCAPE '!')
FROM agents_session WHERE id = %s"""
