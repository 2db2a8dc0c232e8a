"""Rooms tells sessions of its events through rooms.signals, never by importing sessions;
sessions answers from SessionsConfig.ready (sessions/receivers.py). Rooms asks nobody
anything: which agents a room has is its own (RoomAgent), and the room list's session
counts are added by the page that shows them (hub.pages)."""

from __future__ import annotations

import pytest
from django.db import connection

from rooms import signals
from rooms.errors import RoomError
from rooms.models import Room
from rooms.selectors import room_agent_for, rooms_for_user
from rooms.services import membership_remove, message_post
from sessions import dispatch, tasks
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("signal", ["message_posted", "member_removed"])
def test_sessions_answers_every_signal_rooms_sends(signal):
    assert getattr(signals, signal).has_listeners()


def test_a_post_reaches_receivers_in_its_own_transaction():
    owner = make_user()
    room = make_room(owner)
    heard = []

    def receiver(sender, *, message, **kwargs):
        heard.append((message.text, connection.in_atomic_block))

    signals.message_posted.connect(receiver)
    try:
        message_post(room=room, author=owner, kind="chat", text="hello")
    finally:
        signals.message_posted.disconnect(receiver)
    assert heard == [("hello", True)]


def test_a_removal_reaches_receivers_with_the_room_and_the_person():
    owner, member = make_user(), make_user()
    room = make_room(owner, members=[member])
    heard = []

    def receiver(sender, *, room_id, user_id, **kwargs):
        heard.append((room_id, user_id))

    signals.member_removed.connect(receiver)
    try:
        membership_remove(room=room, actor=owner, user_id=member.pk)
    finally:
        signals.member_removed.disconnect(receiver)
    assert heard == [(room.pk, member.pk)]


def test_a_steer_reaches_only_an_agent_assigned_to_the_room():
    owner = make_user()
    assigned, elsewhere = make_agent(), make_agent()
    room = make_room(owner, agents=[assigned])
    assert room_agent_for(room, assigned.pk).agent == assigned
    assert room_agent_for(room, elsewhere.pk) is None
    with pytest.raises(RoomError) as refused:
        message_post(room=room, author=owner, kind="steer", text="stop", agent=elsewhere)
    assert refused.value.code == "unknown_agent"


def test_the_room_list_carries_what_sessions_adds(client):
    owner = make_user()
    make_room(owner, agents=[make_agent(), make_agent()])
    (room,) = rooms_for_user(owner)
    assert room.member_count == 1 and not hasattr(room, "agent_count")
    client.force_login(owner)
    (listed,) = client.get("/").context["rooms"]
    assert (listed.member_count, listed.agent_count, listed.sessions_running) == (1, 2, 0)
    assert isinstance(listed, Room)


def test_services_send_tasks_by_the_names_the_tasks_are_registered_under():
    assert (tasks.run_session.name, tasks.stop_session_jobs.name) == (dispatch.RUN_SESSION, dispatch.STOP_SESSION_JOBS)
