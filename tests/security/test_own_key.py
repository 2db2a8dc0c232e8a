"""Issue 24: a profile carrying its creator's own provider key could be assigned and run
by anyone in a room of their own, spending the creator's account (the gateway already
refused keys for it). Then: adding its creator to the attacker's room made it usable
there (an owner may add anyone), a room's reviewer went on spending it after its
creator left, and a profile on its creator's own keyless server counted as the hub's.
Now one rule for assigning, starting, reviewing, running and gateway keys: a profile that
spends its creator's account (its own key or server) works only in rooms its creator
assigned it to and may act in."""

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
    with pytest.raises(RoomPermissionError, match="only they may assign it to a room"):
        agent_assign(room=room, actor=attacker, agent=own_key_agent)
    assert not RoomAgent.objects.filter(room=room).exists()
    # Assigned behind the services' back (or before this rule): still no session, no key.
    RoomAgent.objects.create(room=room, agent=own_key_agent)
    task = task_create(room=room, actor=attacker, title="Spend", objective="Spend their tokens")
    with pytest.raises(RoomPermissionError, match="its creator assigned it to and may act in"):
        session_start(task=task, agent=own_key_agent, actor=attacker)
    assert not task.sessions.exists()


def test_in_a_room_its_creator_acts_in_it_runs_and_stops_when_they_leave(creator, own_key_agent):
    owner = make_user("owner")
    room = make_room(owner, "Shared", members=[creator])
    agent_assign(room=room, actor=creator, agent=own_key_agent)
    task = task_create(room=room, actor=owner, title="Work", objective="Work")
    assert session_start(task=task, agent=own_key_agent, actor=owner).pk
    made = gateway_key_create(room=room, actor=creator, agent_id=own_key_agent.pk, name="laptop")
    assert made.token
    membership_remove(room=room, actor=owner, user_id=creator.pk)
    task2 = task_create(room=room, actor=owner, title="More", objective="More")
    with pytest.raises(RoomPermissionError, match="its creator assigned it to and may act in"):
        session_start(task=task2, agent=own_key_agent, actor=owner)


def test_adding_its_creator_to_the_attackers_room_is_not_consent(creator, own_key_agent):
    """An owner may add anyone to a room: the creator did not put the profile there."""
    attacker = make_user("attacker")
    room = make_room(attacker, "Attacker's room", members=[creator])
    with pytest.raises(RoomPermissionError, match="only they may assign it"):
        agent_assign(room=room, actor=attacker, agent=own_key_agent)
    RoomAgent.objects.create(room=room, agent=own_key_agent, added_by=attacker)  # behind the services' back
    task = task_create(room=room, actor=attacker, title="Spend", objective="Spend their tokens")
    with pytest.raises(RoomPermissionError, match="its creator assigned it to"):
        session_start(task=task, agent=own_key_agent, actor=attacker)
    with pytest.raises(RoomPermissionError):
        gateway_key_create(room=room, actor=attacker, agent_id=own_key_agent.pk, name="mine now")


def test_a_reviewer_on_its_creators_account_stops_reviewing_when_they_leave(creator, own_key_agent):
    """Its rounds go to people then: work is never merged unreviewed because the reviewer
    may not run (review stays on: the room's setting is the owner's)."""
    from django.db import transaction

    from rooms.services import membership_remove
    from sessions.services.reviews import review_open, room_reviewer, room_reviewer_set

    owner = make_user("owner")
    author = make_agent("author", model="openai:gpt-4.1-mini")
    room = make_room(owner, "Reviewed", members=[creator], agents=[author])
    agent_assign(room=room, actor=creator, agent=own_key_agent)
    room_reviewer_set(room=room, actor=owner, agent_id=own_key_agent.pk)
    membership_remove(room=room, actor=owner, user_id=creator.pk)
    assert room_reviewer(room.pk) == own_key_agent
    session = session_start(task=task_create(room=room, actor=owner, title="Work", objective="Work"),
                            agent=author, actor=owner)
    with transaction.atomic():
        review = review_open(session=session, round_number=1, brief="the diff")
    assert review.state == review.State.PENDING and review.reviewer_session is None  # a person decides
    assert not own_key_agent.sessions.exists()  # nothing ran on the creator's account


def test_a_profile_on_its_creators_own_keyless_server_is_theirs_too(creator):
    own_server = make_agent("gpu-box", model="openai:local", owner=creator, base_url="https://gpu.example.net/v1")
    attacker = make_user("attacker")
    room = make_room(attacker, "Relay")
    with pytest.raises(RoomPermissionError, match="own key or server"):
        agent_assign(room=room, actor=attacker, agent=own_server)
    hub_keys = make_agent("shared", model="openai:gpt-4.1-mini", owner=creator)
    assert agent_assign(room=room, actor=attacker, agent=hub_keys)  # the operator's to share
