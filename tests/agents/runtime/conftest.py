from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from agents.models import AgentProfile, ApprovalRule, RoomAgent
from rooms.repo import TemplateRepository
from rooms.services import room_create

DEMO_REPO = Path(__file__).resolve().parents[3] / "hub" / "demo_repo"


@pytest.fixture
def person(transactional_db):
    return get_user_model().objects.create_user("pat", password="pw-pat-12345")


@pytest.fixture
def demo_room(person):
    return room_create(owner=person, name="Runtime demo", source=TemplateRepository(DEMO_REPO),
                       check_command="python -m pytest -q")


@pytest.fixture
def replay_agent(demo_room):
    agent = AgentProfile.objects.create(name="fixer", model="replay:demo-fix-median.json",
                                        context_window=32_000, output_budget=2_000)
    RoomAgent.objects.create(room=demo_room, agent=agent)
    return agent


@pytest.fixture
def allow_demo_tools(demo_room):
    ApprovalRule.objects.create(room=demo_room, tool="edit_file", path_glob="*.py", decision="allow")
    ApprovalRule.objects.create(room=demo_room, tool="shell", command_prefix="python -m pytest", decision="allow")
