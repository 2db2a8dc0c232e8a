"""Issue 24: a profile carrying its creator's own provider key could be assigned and run
by anyone in a room of their own, spending the creator's account (the gateway already
refused keys for it). Now one rule for assigning, starting and gateway keys: such a
profile works only in rooms its creator may act in."""

from __future__ import annotations

import pytest

from endpoint.keys import gateway_key_create
from rooms.errors import RoomPermissionError
from rooms.models import RoomAgent
from rooms.services import agent_assign, membership_remove
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def creator():
    return make_user("creator")


@pytest.fixture
def own_key_agent(creator):
    return make_agent("spender", model="openai:gpt-4.1-mini", owner=creator, api_key="sk-creators-own-account")


def test_a_stranger_cannot_assign_or_run_a_profile_on_its_creators_own_key(own_key_agent):
    attacker = make_user("attacker")
    room = make_room(attacker, "Attacker's room")
    with pytest.raises(RoomPermissionError, match="works only in rooms its creator may act in"):
        agent_assign(room=room, actor=attacker, agent=own_key_agent)
    assert not RoomAgent.objects.filter(room=room).exists()
    # Assigned behind the services' back (or before this rule): still no session, no key.
    RoomAgent.objects.create(room=room, agent=own_key_agent)
    task = task_create(room=room, actor=attacker, title="Spend", objective="Spend their tokens")
    with pytest.raises(RoomPermissionError, match="its creator may act in"):
        session_start(task=task, agent=own_key_agent, actor=attacker)
    assert not task.sessions.exists()


def test_in_a_room_its_creator_acts_in_it_runs_and_stops_when_they_leave(creator, own_key_agent):
    owner = make_user("owner")
    room = make_room(owner, "Shared", members=[creator])
    agent_assign(room=room, actor=owner, agent=own_key_agent)
    task = task_create(room=room, actor=owner, title="Work", objective="Work")
    assert session_start(task=task, agent=own_key_agent, actor=owner).pk
    made = gateway_key_create(room=room, actor=creator, agent_id=own_key_agent.pk, name="laptop")
    assert made.token
    membership_remove(room=room, actor=owner, user_id=creator.pk)
    task2 = task_create(room=room, actor=owner, title="More", objective="More")
    with pytest.raises(RoomPermissionError, match="its creator may act in"):
        session_start(task=task2, agent=own_key_agent, actor=owner)
