"""People and agents talking to sessions: steers, the sessions a post wakes, agents'
mentions of each other (judged by the mention guard) and their delivery."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from agents.models import AgentProfile
from rooms.errors import RoomError
from rooms.models import Message, Room, RoomAgent
from rooms.services import message_post
from sessions.events import session_event_append
from sessions.models import (
    AgentMention,
    Review,
    Session,
    SessionMessage,
    message_session_id,
)
from sessions.runtime import states
from sessions.runtime.mentions import MentionRules, judge_agent_mention, mentions
from sessions.selectors import agent_mention_history, session_decisions
from sessions.services.lifecycle import session_wake
from sessions.worker.doorbell import ring_on_commit


@transaction.atomic
def session_steer(*, session: Session, actor: AbstractBaseUser, text: str, replaces: tuple[int, ...] = ()) -> Message:
    """Steer one session: stored and shown now, delivered at its next step boundary.
    ``replaces``: decisions of the session (D<n>) this steer takes the place of."""
    if session.state in states.TERMINAL:
        raise RoomError("This session has ended; steer a running one or start a retry.", code="ended")
    decisions = {d.number: d for d in session_decisions(session)}
    if constraints := sorted(n for n in replaces if n in decisions and decisions[n].kind == "constraint"):
        raise RoomError(f"{', '.join(f'D{n}' for n in constraints)} is a constraint of the task: change it by "
                        "editing the task's intent, which the agent re-reads and which wins.", code="invalid")
    unknown = sorted(n for n in set(replaces) if n not in decisions or not decisions[n].in_force)
    if unknown:
        raise RoomError(f"{', '.join(f'D{n}' for n in unknown)} is not a decision in force in this session.",
                        code="invalid")
    message = message_post(room=session.task.room, author=actor, kind=Message.Kind.STEER, text=text,
                           agent=session.agent, replaces=tuple(sorted(set(replaces))), bind=message_binder(session))
    session_wake(session, person=True)
    return message


def message_binder(session: Session) -> Callable[[Message], SessionMessage]:
    """What ``message_post`` records with a message that belongs to ``session``."""
    return lambda message: SessionMessage.objects.create(message=message, session=session)


def sessions_wake_reached(*, message: Message) -> None:
    """A person's post wakes every session it reaches, in the post's transaction
    (rooms.signals.message_posted): a steer to an agent, its sessions in the room; a
    chat, the sessions of each agent it mentions. The queue messages leave after commit,
    so a worker never looks before the message is there. A steer to one session
    (``session_steer``) wakes that session itself."""
    room = message.room
    if message.kind == Message.Kind.STEER and message_session_id(message) is None and message.agent is not None:
        steers_wake_sessions(room=room, agent=message.agent)
    elif message.kind == Message.Kind.CHAT:
        for mentioned in RoomAgent.objects.filter(room=room).select_related("agent"):
            if mentions(message.text, mentioned.agent.name):
                steers_wake_sessions(room=room, agent=mentioned.agent)
    elif message.kind == Message.Kind.AGENT and message.agent is not None:
        agent_mentions_route(message=message)


def agent_mentions_route(*, message: Message) -> None:
    """An agent's post that names other agents of the room: each of their live sessions
    there gets it at its next step boundary (woken if parked), unless the mention guard
    (sessions.runtime.mentions.judge_agent_mention) stops it; a stop is logged on the
    session and posted to the room for people. In the post's transaction, which holds
    the room row (its seq), so two posts of the room are judged one after the other."""
    room, sender = message.room, message.agent
    sender_session_id = message_session_id(message)
    rules = MentionRules(**settings.ATRIUM_AGENT_MENTIONS)
    now = timezone.now()
    since = now - timedelta(seconds=rules.window_seconds)
    for room_agent in RoomAgent.objects.filter(room=room).exclude(agent=sender).select_related("agent"):
        receiver = room_agent.agent
        if not mentions(message.text, receiver.name):
            continue
        # A reviewer works from the diff, the check and the intent: the session under its
        # review does not get to talk to it.
        reviewing_sender = Review.objects.filter(reviewer_session=OuterRef("pk"), session_id=sender_session_id)
        sessions = list(Session.objects.without_state().filter(task__room=room, agent=receiver).exclude(
            state__in=states.TERMINAL | {states.NEEDS_MERGE}).exclude(Exists(reviewing_sender))
            .select_related("task").order_by("pk"))
        # Judged before any row of this post exists: one post counts once for the pair.
        verdicts = []
        for session in sessions:
            pair_times, taken, stopped = agent_mention_history(sender_id=sender.pk, session=session, since=since)
            verdicts.append((session, judge_agent_mention(
                pair_times=pair_times, session_taken=taken, stopped_recently=stopped, now=now.timestamp(),
                rules=rules, sender=sender.name, receiver=receiver.name)))
        for session, verdict in verdicts:
            AgentMention.objects.create(
                message=message, sender=sender, sender_session_id=sender_session_id, session=session,
                state=AgentMention.State.PENDING if verdict.deliver else AgentMention.State.STOPPED,
                reason=verdict.reason)
            if verdict.deliver:
                session_wake(session)
                ring_on_commit([session.pk])  # a running await returns to read it
                continue
            session_event_append(session, "mention.stopped", {
                "message_id": message.pk, "seq": message.seq, "from": sender.name, "reason": verdict.reason})
            if verdict.announce:
                message_post(room=room, author=None, kind=Message.Kind.SYSTEM, text=(
                    f"Mention loop stopped: {sender.name}'s message #{message.seq} was not delivered to "
                    f"{receiver.name} (session {session.pk}) because {verdict.reason}. Write to either agent "
                    "to go on."))


def agent_mentions_mark_delivered(*, session: Session, message_ids: tuple[int, ...]) -> int:
    """The session's boundary read these agents' posts (compare-and-swap: once)."""
    if not message_ids:
        return 0
    return AgentMention.objects.filter(session=session, message_id__in=message_ids,
                                       state=AgentMention.State.PENDING).update(
        state=AgentMention.State.DELIVERED, delivered_at=timezone.now())


def steers_wake_sessions(*, room: Room, agent: AgentProfile) -> None:
    """People wrote to ``agent`` in ``room`` (a steer, a mention): each of its sessions
    there that is not over is woken (parked) or moved to the front of the queue."""
    reached = Session.objects.without_state().filter(task__room=room, agent=agent).exclude(
        state__in=states.TERMINAL | {states.NEEDS_MERGE}).select_related("task")
    for session in reached:
        session_wake(session, person=True)
