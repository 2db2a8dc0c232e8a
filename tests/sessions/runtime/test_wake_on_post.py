"""Every way a person reaches a session wakes it at once, in the post's transaction, and
puts it ahead of the queue; turns are counted so nothing is delivered twice.

In this process against the real PostgreSQL and Redis broker (no worker): what a worker
would receive is read from the run queue itself.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents.models import AgentProfile
from hub.celery import app
from rooms.models import Message, RoomAgent
from rooms.services import message_post
from sessions import dispatch
from sessions.models import Approval, Session
from sessions.services.approvals import approval_decide
from sessions.services.lifecycle import session_start
from sessions.services.talk import session_steer
from sessions.services.tasks import task_create
from sessions.tasks import sweep_sessions
from sessions.worker.host import DjangoHost
from sessions.worker.lease import session_claim
from sessions.worker.run import run_next, run_session
from tests.rooms.test_consumers import Socket, cookie_for


@pytest.fixture(autouse=True)
def empty_run_queue(transactional_db):
    """Turns left by earlier tests of this run (no worker takes them here)."""
    def purge():
        with app.connection_for_write() as connection:
            connection.default_channel.queue_purge(settings.CELERY_TASK_DEFAULT_QUEUE)

    purge()
    yield purge
    purge()


def start(person, room, agent, title="Fix median"):
    task = task_create(room=room, actor=person, title=title, objective="Make the tests pass")
    return session_start(task=task, agent=agent, actor=person)


def parked(person, room, agent) -> Session:
    session = start(person, room, agent)
    run_session(session.pk)  # reads, then parks on the first shell call (no rules)
    session.refresh_from_db()
    assert session.state == "awaiting_approval"
    return session


def state(session) -> str:
    return Session.objects.values_list("state", flat=True).get(pk=session.pk)


def steer_through_the_room_socket(room, person, agent, text: str) -> None:
    cookie = cookie_for(person)

    async def scenario():
        socket = Socket(room.slug, cookie)
        assert await socket.open()
        await socket.hello()
        await socket.send(type="steer", agent=agent.pk, text=text, id="f1")
        while (frame := await socket.receive())["type"] != "ack":
            assert frame["type"] != "error", frame
        await socket.close()

    async_to_sync(scenario)()


def test_a_steer_in_the_room_chat_wakes_the_agents_parked_session_at_once(person, demo_room, replay_agent,
                                                                           empty_run_queue):
    session = parked(person, demo_room, replay_agent)
    empty_run_queue()
    steer_through_the_room_socket(demo_room, person, replay_agent, "only touch textstats.py")
    session.refresh_from_db()
    assert session.state == "queued" and session.attention_at is not None
    assert dispatch.queued_turns() == 1  # a worker is told now, not at beat's next sweep
    assert run_next().startswith(f"session {session.pk}:")


def test_a_chat_mention_wakes_that_agent_only(person, demo_room, replay_agent):
    other = AgentProfile.objects.create(name="fixerbot", model="replay:demo-fix-median.json",
                                        context_window=32_000, output_budget=2_000)
    RoomAgent.objects.create(room=demo_room, agent=other)
    mine, theirs = parked(person, demo_room, replay_agent), parked(person, demo_room, other)
    message_post(room=demo_room, author=person, kind="chat", text="@fixerbot, look at the median")
    assert (state(mine), state(theirs)) == ("awaiting_approval", "queued")
    message_post(room=demo_room, author=person, kind="chat", text="no mention at all")
    assert state(mine) == "awaiting_approval"
    message_post(room=demo_room, author=person, kind="chat", text="thanks @Fixer!")
    assert state(mine) == "queued"


def test_the_wake_is_part_of_the_posts_transaction(person, demo_room, replay_agent, empty_run_queue):
    session = parked(person, demo_room, replay_agent)
    empty_run_queue()
    with pytest.raises(RuntimeError), transaction.atomic():
        message_post(room=demo_room, author=person, kind="steer", text="stop", agent=replay_agent)
        assert state(session) == "queued"
        raise RuntimeError("the post fails after the wake")
    assert state(session) == "awaiting_approval"
    assert not Message.objects.filter(kind="steer").exists() and dispatch.queued_turns() == 0


def test_a_session_page_steer_and_a_decision_put_their_session_ahead_of_the_queue(person, demo_room,
                                                                                    replay_agent):
    waiting = [start(person, demo_room, replay_agent, title=f"Task {n}") for n in range(3)]
    steered = start(person, demo_room, replay_agent, title="Steered")
    assert dispatch.candidates()[:3] == [s.pk for s in waiting]
    session_steer(session=steered, actor=person, text="this one first")
    assert dispatch.candidates()[0] == steered.pk
    # A session whose worker holds it reads steers at its next boundary; nothing to move.
    assert session_claim(waiting[0].pk, "someone-else")
    session_steer(session=waiting[0], actor=person, text="later")
    assert Session.objects.get(pk=waiting[0].pk).attention_at is None
    # A decision on a parked session: queued and ahead of the others still waiting.
    decided = parked(person, demo_room, replay_agent)
    approval_decide(approval=Approval.objects.get(session=decided), actor=person, decision="approve")
    assert dispatch.candidates()[:2] == [steered.pk, decided.pk]


def test_a_running_slice_yields_when_people_wait_for_another_session(settings, person, demo_room, replay_agent,
                                                                     allow_demo_tools):
    settings.ATRIUM_ATTENTION_GRACE_SECONDS = 0
    steered = start(person, demo_room, replay_agent, title="Steered")
    session_steer(session=steered, actor=person, text="look at me")
    running = start(person, demo_room, replay_agent)
    assert run_session(running.pk) == "ran"
    running.refresh_from_db()
    # One unit, then the turn went back: still running for people, no worker holds it.
    assert running.state == "running" and running.lease_owner == "" and running.step <= 1
    assert dispatch.candidates()[0] == steered.pk


def test_the_sweep_sends_turns_only_for_sessions_the_queue_has_none_for(person, demo_room, replay_agent,
                                                                        empty_run_queue):
    sessions = [start(person, demo_room, replay_agent, title=f"Task {n}") for n in range(5)]
    assert dispatch.queued_turns() == 5
    # Long waits (their wake times passed) are not lost messages: nothing is sent again.
    Session.objects.update(wake_at=timezone.now() - timedelta(minutes=5))
    assert sweep_sessions()["requeued"] == 0 and dispatch.queued_turns() == 5
    # The queue lost its messages (a broker restart without persistence): one turn each.
    empty_run_queue()
    assert sweep_sessions()["requeued"] == 5 and dispatch.queued_turns() == 5
    assert sweep_sessions()["requeued"] == 0
    # A turn with nothing left to claim does nothing.
    Session.objects.filter(pk__in=[s.pk for s in sessions]).update(state="cancelled")
    assert run_next() == "nothing to run"


def test_sweeps_have_their_own_queue_and_expire_within_a_period():
    assert settings.CELERY_SWEEP_QUEUE != settings.CELERY_TASK_DEFAULT_QUEUE
    route = app.amqp.router.route({}, "sessions.tasks.sweep_sessions")
    assert route["queue"].name == settings.CELERY_SWEEP_QUEUE
    assert app.amqp.router.route({}, "sessions.tasks.run_session")["queue"].name == settings.CELERY_TASK_DEFAULT_QUEUE
    assert settings.CELERY_BEAT_SCHEDULE["sweep-sessions"]["options"]["expires"] == settings.ATRIUM_SWEEP_SECONDS


def test_a_mention_written_while_the_unit_looked_wakes_the_session_it_parks(person, demo_room, monkeypatch,
                                                                             empty_run_queue):
    """The post's wake found the session running (its worker was deciding to park it at
    an await), so the parking itself looks again and queues it: beat's sweep is not
    needed for it."""
    recording = Path(settings.REPLAYS_DIR) / f"awaits-{uuid.uuid4().hex[:8]}.json"
    recording.write_text(json.dumps({"turns": [
        {"text": "Asking.", "tool_calls": [{"name": "await", "arguments": {"seconds": 600}}]}, {"text": "Done."}]}))
    try:
        agent = AgentProfile.objects.create(name="asker", model=f"replay:{recording.name}", context_window=32_000,
                                            output_budget=2_000)
        RoomAgent.objects.create(room=demo_room, agent=agent)
        session = start(person, demo_room, agent)
        looked = DjangoHost.await_ready

        def written_while_looking(host, call, *, chat_after):
            ready = looked(host, call, chat_after=chat_after)
            message_post(room=demo_room, author=person, kind="chat", text="@asker go ahead")
            assert state(session) == "running"  # so its wake only rang
            return ready

        monkeypatch.setattr(DjangoHost, "await_ready", written_while_looking)
        empty_run_queue()
        run_session(session.pk)
    finally:
        recording.unlink()
    assert state(session) == "queued" and dispatch.queued_turns() == 1
