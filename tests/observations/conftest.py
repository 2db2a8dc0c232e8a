from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from agents.models import AgentProfile
from rooms.services import room_create
from sessions.models import Session, Task


@pytest.fixture
def owner(db):
    return get_user_model().objects.create_user("olga", password="pw-olga-123")


@pytest.fixture
def room(owner):
    return room_create(owner=owner, name="Ledger room")


@pytest.fixture
def agent(db):
    return AgentProfile.objects.create(name="reader", model="replay:demo.json", context_window=30_000, output_budget=1_000)


@pytest.fixture
def make_session(room, agent, owner):
    def make(attempt: int = 1) -> Session:
        task, _ = Task.objects.get_or_create(room=room, title="Fix it", defaults={"objective": "Fix the bug", "created_by": owner})
        return Session.objects.create(task=task, agent=agent, attempt=attempt)

    return make
