"""People, a room with an agent, and sessions in any state for the web tests.

Sessions are built through the services where the test is about what people see of
a real start (``started``); ``session_in`` writes a row in a given state directly,
the way a worker would have left it, so page tests need no worker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from django.test import Client

from agents.models import AgentProfile
from hub.management.commands.seed_demo import DEMO_TEST_COMMAND
from rooms.models import Room, RoomAgent
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
from sessions.events import session_event_append
from sessions.models import ApprovalRule, Session, SessionEvent, Task
from sessions.services.tasks import task_create
from tests.rooms.factories import make_agent, make_room, make_user

DEMO_REPO = Path(__file__).resolve().parents[3] / "hub" / "demo_repo"
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def owner(transactional_db):
    return make_user("olga")


@pytest.fixture
def member(transactional_db):
    return make_user("mo")


@pytest.fixture
def viewer(transactional_db):
    return make_user("vic")


@pytest.fixture
def stranger(transactional_db):
    return make_user("stan")


@pytest.fixture
def agent(transactional_db) -> AgentProfile:
    return make_agent("fixer", model="replay:demo-fix-median.json")


@pytest.fixture
def room(owner, member, viewer, agent) -> Room:
    return make_room(owner, "Work room", members=[member], viewers=[viewer], agents=[agent])


@pytest.fixture
def task(room, owner) -> Task:
    return task_create(room=room, actor=owner, title="Fix median", objective="Make the tests pass",
                       constraints="Don't change the tests.")


@pytest.fixture
def login():
    def _login(user) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return _login


def session_in(task: Task, agent: AgentProfile, state: str, **fields: Any) -> Session:
    """A session row as a worker would leave it in ``state``, with its state event."""
    attempt = fields.pop("attempt", Session.objects.filter(task=task, agent=agent).count() + 1)
    session = Session.objects.create(task=task, agent=agent, state=state, attempt=attempt, **fields)
    append(session, "session.state_changed", {"state": state, "reason": fields.get("reason", "")})
    return session


def append(session: Session, kind: str, payload: dict[str, Any]) -> SessionEvent:
    with transaction.atomic():
        return session_event_append(session, kind, payload)


@pytest.fixture
def demo_room(owner, transactional_db) -> Room:
    """The demo repository with its check, the replay fixer and the rules that let it work."""
    room = room_create(owner=owner, name="Replay room", source=TemplateRepository(DEMO_REPO),
                       check_command="python -m pytest -q")
    fixer = AgentProfile.objects.create(name="Replay fixer", model="replay:demo-fix-median.json",
                                        context_window=32_000, output_budget=2_000)
    RoomAgent.objects.create(room=room, agent=fixer)
    ApprovalRule.objects.create(room=room, tool="edit_file", path_glob="*.py", decision="allow")
    ApprovalRule.objects.create(room=room, tool="shell", command_prefix=DEMO_TEST_COMMAND, decision="allow")
    return room
