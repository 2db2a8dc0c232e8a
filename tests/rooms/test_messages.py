"""Posting to a room: dense seqs under concurrency, refused messages that write nothing,
broadcasts only after commit, steers delivered once."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection, transaction

from rooms import broadcast, events, services
from rooms.errors import RoomError
from rooms.models import Message, Room
from tests.rooms.factories import make_agent, make_room, make_user
from tests.rooms.test_services import Rollback

pytestmark = pytest.mark.django_db(transaction=True)


def test_each_message_gets_the_rooms_next_seq():
    owner = make_user()
    room, other_room = make_room(owner), make_room(owner)
    seqs = [services.message_post(room=room, author=owner, kind="chat", text=f"m{i}").seq for i in range(3)]
    assert seqs == [2, 3, 4]  # 1 is "created the room"
    assert services.message_post(room=other_room, author=owner, kind="chat", text="x").seq == 2
    room.refresh_from_db()
    assert room.last_message_seq == 4


def test_concurrent_posts_get_distinct_dense_seqs():
    owner = make_user()
    room = make_room(owner)
    errors: list[BaseException] = []

    def post_many(n: int) -> None:
        try:
            for i in range(n):
                services.message_post(room=Room.objects.get(pk=room.pk), author=owner, kind="chat", text=f"{i}")
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=post_many, args=(10,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    seqs = sorted(Message.objects.filter(room=room).values_list("seq", flat=True))
    assert seqs == list(range(1, 42))


def test_a_rolled_back_post_gives_its_seq_back():
    owner = make_user()
    room = make_room(owner)
    with pytest.raises(Rollback), transaction.atomic():
        services.message_post(room=room, author=owner, kind="chat", text="lost")
        raise Rollback
    assert services.message_post(room=room, author=owner, kind="chat", text="kept").seq == 2


@pytest.mark.parametrize(
    ("kind", "text", "agent", "code"),
    [
        ("chat", "", False, "empty"),
        ("chat", " \n\t ", False, "empty"),
        ("chat", "x" * (32 * 1024 + 1), False, "too_large"),
        ("steer", "stop", False, "unknown_agent"),
        ("gossip", "hi", False, "invalid"),
    ],
    ids=["empty", "blank", "oversized", "steer-without-assigned-agent", "unknown-kind"],
)
def test_bad_messages_are_refused_and_nothing_is_written(kind, text, agent, code):
    owner = make_user()
    room = make_room(owner)
    unassigned = make_agent()
    with pytest.raises(RoomError) as refused:
        services.message_post(room=room, author=owner, kind=kind, text=text, agent=unassigned)
    assert refused.value.code == code
    room.refresh_from_db()
    assert room.last_message_seq == 1
    assert Message.objects.filter(room=room).count() == 1


def test_a_message_of_exactly_the_limit_in_utf8_bytes_is_accepted_and_one_more_byte_is_not():
    owner = make_user()
    room = make_room(owner)
    limit = settings.ATRIUM_MAX_MESSAGE_BYTES
    at_limit = "é" * (limit // 2)  # two bytes each
    assert services.message_post(room=room, author=owner, kind="chat", text=at_limit).text == at_limit
    with pytest.raises(RoomError, match="limit"):
        services.message_post(room=room, author=owner, kind="chat", text=at_limit + "a")


def test_viewers_and_strangers_cannot_post():
    owner, viewer, stranger = make_user(), make_user(), make_user()
    room = make_room(owner, viewers=[viewer])
    for person in (viewer, stranger):
        with pytest.raises(RoomError) as refused:
            services.message_post(room=room, author=person, kind="chat", text="hello")
        assert refused.value.code == "forbidden"
    assert Message.objects.filter(room=room).count() == 2  # created + added viewer


def test_a_steer_names_an_agent_assigned_to_the_room():
    owner = make_user()
    agent = make_agent()
    room = make_room(owner, agents=[agent])
    steer = services.message_post(room=room, author=owner, kind="steer", text="use the v2 API", agent=agent)
    assert (steer.kind, steer.agent, steer.delivered_at) == ("steer", agent, None)


def listen(room: Room):
    """Subscribe a channel to the room's group; returns a receive(timeout) function.

    A plain (non-"specific") channel name: channels_redis reads it straight from Redis,
    with no receive buffer tied to one event loop, so each receive may use a new loop.
    """
    broadcast.flush()  # what the test posted before has left: this listens from here on
    layer = get_channel_layer()
    channel = f"test-listener-{uuid.uuid4().hex}"
    async_to_sync(layer.group_add)(events.room_group(room.pk), channel)

    async def _receive(timeout: float):
        try:
            return await asyncio.wait_for(layer.receive(channel), timeout)
        except TimeoutError:
            return None

    return lambda timeout=1.0: async_to_sync(_receive)(timeout)


def test_messages_are_broadcast_only_after_commit_and_never_when_rolled_back():
    owner = make_user()
    room = make_room(owner)
    receive = listen(room)
    with transaction.atomic():
        services.message_post(room=room, author=owner, kind="chat", text="after commit")
        assert receive(0.3) is None
    event = receive()
    assert event["type"] == events.MESSAGE_POSTED
    assert (event["seq"], event["frame"]["text"]) == (2, "after commit")
    assert "after commit" in event["frame"]["html"]

    with pytest.raises(Rollback), transaction.atomic():
        services.message_post(room=room, author=owner, kind="chat", text="rolled back")
        raise Rollback
    assert receive(0.3) is None


def test_a_steer_is_delivered_once_and_the_room_hears_about_it():
    owner = make_user()
    agent = make_agent()
    room = make_room(owner, agents=[agent])
    steer = services.message_post(room=room, author=owner, kind="steer", text="focus on tests", agent=agent)
    receive = listen(room)
    assert services.message_mark_delivered(message=steer) is True
    assert services.message_mark_delivered(message=Message.objects.get(pk=steer.pk)) is False
    steer.refresh_from_db()
    assert steer.delivered_at is not None
    event = receive()
    assert event["type"] == events.MESSAGE_UPDATED
    assert event["frame"]["type"] == "message.updated"
    assert event["frame"]["seq"] == steer.seq
    assert "delivered" in event["frame"]["html"]
    assert receive(0.3) is None  # the second call broadcast nothing


def test_only_steers_are_delivered():
    owner = make_user()
    room = make_room(owner)
    chat = services.message_post(room=room, author=owner, kind="chat", text="hi")
    with pytest.raises(RoomError, match="Only steers"):
        services.message_mark_delivered(message=chat)
