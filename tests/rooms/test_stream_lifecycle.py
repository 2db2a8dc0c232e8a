"""A stream socket leaves its group however it ends (a crash and a kill included), replays
at most a page at hello, and a disconnect cancels a replay in progress. Through the
full ASGI stack and the real Redis channel layer."""

from __future__ import annotations

import asyncio

import pytest
import redis
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from rooms import events, streams
from rooms.models import Message
from tests.rooms.factories import make_room, make_user
from tests.rooms.test_consumers import Socket, cookie_for, post

pytestmark = pytest.mark.django_db(transaction=True)


def members(group: str) -> list[bytes]:
    """The channels in ``group``, as the Redis layer stores them (a sorted set)."""
    layer = get_channel_layer()
    client = redis.Redis.from_url(settings.REDIS_URL)
    try:
        return client.zrange(layer._group_key(group), 0, -1)
    finally:
        client.close()


async def joined(room, cookie: bytes) -> Socket:
    socket = Socket(room.slug, cookie)
    assert await socket.open()
    await socket.hello()
    assert len(await database_sync_to_async(members)(events.room_group(room.pk))) == 1
    return socket


@pytest.mark.parametrize("end", ["crash", "kill", "disconnect"])
def test_a_consumer_leaves_its_group_however_it_ends(end):
    owner = make_user()
    room = make_room(owner)
    group, cookie = events.room_group(room.pk), cookie_for(owner)

    async def scenario():
        socket = await joined(room, cookie)
        future = socket.communicator.future
        if end == "crash":
            # A broken group event makes the handler raise mid-stream: the consumer dies.
            await get_channel_layer().group_send(group, {"type": events.MESSAGE_POSTED})
            with pytest.raises(KeyError):
                await asyncio.wait_for(asyncio.shield(future), 3)
        elif end == "kill":
            future.cancel()
            with pytest.raises(asyncio.CancelledError):
                await future
        else:
            await socket.close()
        assert await database_sync_to_async(members)(group) == []

    async_to_sync(scenario)()


def test_a_hello_far_behind_replays_the_newest_page_only(monkeypatch):
    monkeypatch.setattr(streams, "REPLAY_PAGE", 5)
    owner = make_user()
    room = make_room(owner)  # its first message: "… created the room."
    for n in range(12):
        Message.objects.create(room=room, seq=n + 2, kind="chat", author=owner, text=f"m{n}")
    room.last_message_seq = 13
    room.save(update_fields=["last_message_seq"])
    cookie = cookie_for(owner)

    async def scenario():
        socket = Socket(room.slug, cookie)
        assert await socket.open()
        await socket.send(type="hello", last_seq=0)
        assert await socket.receive() == {"type": "truncated", "after_seq": 0, "resume_seq": 8}
        replayed = []
        while (frame := await socket.receive())["type"] != "synced":
            replayed.append(frame["seq"])
        assert replayed == [9, 10, 11, 12, 13] and frame["last_seq"] == 13
        await post(room, owner, "live")
        assert (await socket.receive())["seq"] == 14
        await socket.close()

    async_to_sync(scenario)()


def test_a_disconnect_cancels_a_replay_in_progress(monkeypatch):
    owner = make_user()
    room = make_room(owner)
    started, cancelled = asyncio.Event(), []
    original = streams.SeqStreamConsumer._send_from_database

    async def slow(self, **kwargs):
        started.set()
        try:
            await asyncio.sleep(30)  # a long replay on a busy database thread
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        await original(self, **kwargs)

    monkeypatch.setattr(streams.SeqStreamConsumer, "_send_from_database", slow)
    cookie = cookie_for(owner)

    async def scenario():
        socket = Socket(room.slug, cookie)
        assert await socket.open()
        await socket.send(type="hello", last_seq=0)
        await asyncio.wait_for(started.wait(), 3)
        await asyncio.wait_for(socket.close(), 3)
        assert cancelled == [True]
        assert await database_sync_to_async(members)(events.room_group(room.pk)) == []

    async_to_sync(scenario)()
