from __future__ import annotations

import pytest

from agents.models import AgentProfile
from rooms.models import RoomAgent
from sessions.models import ApprovalRule
from sessions.services.lifecycle import session_start
from sessions.services.talk import session_steer
from sessions.services.tasks import task_create
from sessions.worker.run import run_session


@pytest.fixture
def patterns_session(person, demo_room):
    """A session with known patterns, run in this process with the worker's code: re-reads,
    a failing test run twice, an edit, a read of what it wrote, passing tests twice, and a
    person's steer."""
    ApprovalRule.objects.create(room=demo_room, tool="*", decision="allow")
    agent = AgentProfile.objects.create(name="looper", model="replay:patterns.json",
                                        context_window=32_000, output_budget=2_000)
    RoomAgent.objects.create(room=demo_room, agent=agent)
    task = task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass")
    session = session_start(task=task, agent=agent, actor=person)
    session_steer(session=session, actor=person, text="Keep the diff small, please.")
    assert run_session(session.pk) == "ran"
    session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    return session
