"""A post that reaches a running session rings its doorbell (Redis pub/sub, after commit);
the worker asks the database only when it rang, not every 0.1 s."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from agents.models import AgentProfile
from rooms.models import RoomAgent
from rooms.services import message_post
from sessions.models import AgentMention
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from sessions.worker.doorbell import Doorbell, InputWatch
from sessions.worker.lease import LeaseKeeper, session_claim
from sessions.worker.runner import SessionRunner


@pytest.fixture
def session(person, demo_room, replay_agent):
    task = task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass")
    return session_start(task=task, agent=replay_agent, actor=person)


def test_a_committed_steer_rings_the_sessions_doorbell_and_a_rolled_back_one_does_not(session, person, demo_room,
                                                                                     replay_agent):
    bell = Doorbell(session.pk)
    try:
        assert not bell.rung.wait(1.5)  # listening, and quiet
        with pytest.raises(RuntimeError), transaction.atomic():
            message_post(room=demo_room, author=person, kind="steer", text="stop", agent=replay_agent)
            raise RuntimeError("rolled back")
        assert not bell.rung.wait(1.0)
        message_post(room=demo_room, author=person, kind="chat", text="@fixer keep it small")
        assert bell.rung.wait(2.0)
    finally:
        bell.close()


def test_the_database_is_asked_only_when_the_bell_rang(session, person, demo_room, replay_agent):
    asked = []
    bell = Doorbell(session.pk)
    try:
        watch = InputWatch(bell, lambda: asked.append(1) or True)
        assert watch() and len(asked) == 1  # the first call always asks
        for _ in range(50):
            assert not watch()  # a shell polling every 0.1 s: no query
        assert len(asked) == 1
        message_post(room=demo_room, author=person, kind="steer", text="stop", agent=replay_agent)
        assert bell.rung.wait(2.0)
        assert watch() and len(asked) == 2
    finally:
        bell.close()


def test_the_workers_waiting_tools_pause_on_the_sessions_doorbell(session, person, demo_room, replay_agent):
    """A running shell or await is woken by the ring itself, not at its next look."""
    owner = "doorbell-test-worker"
    assert session_claim(session.pk, owner)
    runner = SessionRunner(session, owner, LeaseKeeper(session.pk, owner))
    try:
        assert runner.toolbox.pause == runner._pause
        started = time.monotonic()
        runner.toolbox.pause(0.3)  # quiet: the whole pause passes
        assert time.monotonic() - started >= 0.29
        def steer() -> None:
            message_post(room=demo_room, author=person, kind="steer", text="stop", agent=replay_agent)
            connection.close()  # this thread's own

        threading.Timer(0.2, steer).start()
        started = time.monotonic()
        runner.toolbox.pause(30)
        assert time.monotonic() - started < 10  # the ring ended it
    finally:
        runner.doorbell.close()
        runner.provider.close()


def test_another_agents_mention_rings_the_doorbell_and_one_the_guard_stops_does_not(session, demo_room, settings):
    """An agent's post reaches a session blocked in a command or an await as a steer does:
    at once, not at the next periodic look."""
    alice = AgentProfile.objects.create(name="alice", model="replay:demo-fix-median.json")
    RoomAgent.objects.create(room=demo_room, agent=alice)
    bell = Doorbell(session.pk)
    try:
        assert not bell.rung.wait(1.5)  # listening, and quiet
        message_post(room=demo_room, author=None, kind="agent", text="@fixer I changed stats.py", agent=alice)
        assert bell.rung.wait(2.0)
        bell.rung.clear()
        settings.ATRIUM_AGENT_MENTIONS = {"per_pair": 1, "window_seconds": 600, "per_session": 10}
        message_post(room=demo_room, author=None, kind="agent", text="@fixer again", agent=alice)
        assert AgentMention.objects.filter(session=session, state="stopped").count() == 1
        assert not bell.rung.wait(1.0)
    finally:
        bell.close()
