"""The boundary's one query for what waits (sessions.worker.inputs._waiting, written as
SQL) asks what the ORM's querysets of steers, agents' mentions and chat naming the agent
ask, whatever the messages: bound or not, delivered or not, the name's case, a name
holding LIKE's own wildcards and escape, chat before the cursor or before the session;
and nothing for a session deleted."""

from __future__ import annotations

from django.utils import timezone

from agents.models import AgentProfile
from rooms.models import Message, RoomAgent
from rooms.services import message_post
from sessions.models import AgentMention, Session, SessionMessage
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from sessions.worker.inputs import _agent_mentions, _chat_naming, _steers, _waiting


def asked_of_the_orm(session, chat_after: int) -> tuple[bool, bool, bool]:
    return (_steers(session).exists(), _agent_mentions(session).exists(),
            _chat_naming(session, chat_after).exists())


def test_the_waiting_query_answers_as_the_orms_querysets(person, demo_room, replay_agent):
    post = lambda kind, text, **kw: message_post(room=demo_room, author=person, kind=kind, text=text, **kw)  # noqa: E731
    early = post("chat", "@fix_er%! before the session")
    agent = AgentProfile.objects.create(name="fix_er%!", model=replay_agent.model, context_window=32_000)
    RoomAgent.objects.create(room=demo_room, agent=agent)
    first, second = (session_start(task=task_create(room=demo_room, actor=person, title=title, objective=title),
                                   agent=agent, actor=person) for title in ("Fix median", "Fix mean"))
    checked = []

    def check(expected_first: tuple[bool, bool, bool]) -> None:
        latest = Message.objects.filter(room=demo_room).order_by("-seq").values_list("seq", flat=True).first()
        for session in (first, second):
            for chat_after in (0, early.seq, latest):
                assert _waiting(session, chat_after) == asked_of_the_orm(session, chat_after), (session, chat_after)
        assert _waiting(first, 0) == expected_first
        checked.append(expected_first)

    check((False, False, False))
    post("chat", "@fixXer%!, not the name: LIKE's _ would match it")
    post("chat", "@fix_erX! and @fix_er%%: not the name either")
    check((False, False, False))
    post("chat", "@FIX_ER%!S, the name in capitals at the start of a longer one")
    check((False, False, True))
    steer = post("steer", "keep it small", agent=agent)
    check((True, False, True))
    SessionMessage.objects.create(message=steer, session=second)
    check((False, False, True))
    Message.objects.filter(pk=steer.pk).update(delivered_at=timezone.now())
    mine = post("steer", "for the first", agent=agent, bind=lambda m: SessionMessage.objects.create(message=m,
                                                                                                   session=first))
    check((True, False, True))
    Message.objects.filter(pk=mine.pk).update(delivered_at=timezone.now())
    said = post("chat", "a post of the replay agent's, routed to the first")
    mention = AgentMention.objects.create(message=said, sender=replay_agent, session=first)
    check((False, True, True))
    AgentMention.objects.filter(pk=mention.pk).update(state=AgentMention.State.DELIVERED)
    check((False, False, True))
    assert len(checked) == 8
    post("steer", "for whichever session", agent=agent)
    Session.objects.filter(pk=second.pk).delete()
    assert _waiting(first, 0) == (True, False, True)
    assert _waiting(second, 0) == (False, False, False)  # nothing waits for a session that is gone
