"""The room websocket, through the full ASGI stack (origin check, session auth, routing)
and the real Redis channel layer.

Each test is a sync pytest function that runs one async scenario with async_to_sync,
so database_sync_to_async inside the consumer shares the test's database connection.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from hub.asgi import application
from rooms import broadcast, events, services
from rooms.consumers import CLOSE_FORBIDDEN
from rooms.models import Message, Room
from tests.rooms.factories import make_room, make_user

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT = 3


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    async_to_sync(scenario)()


def cookie_for(user) -> bytes:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}".encode()


class Socket:
    """A WebsocketCommunicator with the frames of this protocol as methods."""

    def __init__(self, slug: str, cookie: bytes | None, origin: bytes = b"http://127.0.0.1") -> None:
        headers = [(b"origin", origin), (b"host", b"127.0.0.1")]
        if cookie:
            headers.append((b"cookie", cookie))
        self.communicator = WebsocketCommunicator(application, f"/ws/rooms/{slug}/", headers=headers)

    async def open(self) -> bool:
        connected, _ = await self.communicator.connect(timeout=TIMEOUT)
        return connected

    async def send(self, **frame: Any) -> None:
        await self.communicator.send_to(text_data=json.dumps(frame))

    async def send_raw(self, text: str) -> None:
        await self.communicator.send_to(text_data=text)

    async def receive(self) -> dict[str, Any]:
        return await self.communicator.receive_json_from(timeout=TIMEOUT)

    async def hello(self, last_seq: int = 0) -> list[dict[str, Any]]:
        """Say hello; return the replayed message frames (the "synced" frame ends them).
        What the test did before has been broadcast first: the socket joins its groups at
        hello, and a send still queued would reach it as if it came after."""
        await asyncio.to_thread(broadcast.flush)
        await self.send(type="hello", last_seq=last_seq)
        replayed = []
        while (frame := await self.receive())["type"] != "synced":
            replayed.append(frame)
        assert frame["last_seq"] == (replayed[-1]["seq"] if replayed else last_seq)
        return replayed

    async def expect_error(self, code: str) -> dict[str, Any]:
        frame = await self.receive()
        assert frame["type"] == "error", frame
        assert frame["code"] == code, frame
        assert frame["message"]
        return frame

    async def nothing(self) -> bool:
        await asyncio.to_thread(broadcast.flush)  # what was queued has left: it would be here
        return await self.communicator.receive_nothing(timeout=0.3)

    async def close_code(self) -> int:
        output = await self.communicator.receive_output(timeout=TIMEOUT)
        assert output["type"] == "websocket.close", output
        return output["code"]

    async def close(self) -> None:
        await self.communicator.disconnect()


async def post(room: Room, author, text: str, kind: str = "chat", agent=None) -> Message:
    return await database_sync_to_async(services.message_post)(
        room=room, author=author, kind=kind, text=text, agent=agent
    )


def count_messages(room: Room) -> int:
    return Message.objects.filter(room=room).count()


def test_two_members_see_each_others_messages():
    alice, bob = make_user("alice"), make_user("bob")
    room = make_room(alice, members=[bob])
    alice_cookie, bob_cookie = cookie_for(alice), cookie_for(bob)

    async def scenario():
        a, b = Socket(room.slug, alice_cookie), Socket(room.slug, bob_cookie)
        try:
            assert await a.open() and await b.open()
            history = await a.hello(0)
            assert [f["text"] for f in history] == ["alice created the room.", "alice added bob as member."]
            await b.hello(room.last_message_seq)

            await a.send(type="chat", text="hi bob")
            for socket in (a, b):
                frame = await socket.receive()
                assert (frame["type"], frame["kind"], frame["author"], frame["text"]) == ("message", "chat", "alice", "hi bob")
                assert frame["seq"] == 3
                assert 'id="message-3"' in frame["html"] and "hi bob" in frame["html"]

            await b.send(type="chat", text="hello <alice>")
            for socket in (a, b):
                frame = await socket.receive()
                assert (frame["author"], frame["seq"]) == ("bob", 4)
                assert "hello &lt;alice&gt;" in frame["html"]  # the fragment is escaped
            assert await a.nothing() and await b.nothing()
        finally:
            await a.close()
            await b.close()

    run(scenario)
    assert list(Message.objects.filter(room=room, kind="chat").values_list("author__username", "text")) == [
        ("alice", "hi bob"),
        ("bob", "hello <alice>"),
    ]


def test_a_reconnect_with_last_seq_gets_exactly_the_missed_messages_then_the_live_stream():
    alice, bob = make_user("alice"), make_user("bob")
    room = make_room(alice, members=[bob])
    bob_cookie = cookie_for(bob)

    async def scenario():
        first = Socket(room.slug, bob_cookie)
        assert await first.open()
        seen = await first.hello(0)
        last_seq = seen[-1]["seq"]
        await first.close()

        missed = [await post(room, alice, f"while away {i}") for i in range(3)]

        again = Socket(room.slug, bob_cookie)
        try:
            assert await again.open()
            replayed = await again.hello(last_seq)
            assert [f["seq"] for f in replayed] == [m.seq for m in missed]
            assert [f["text"] for f in replayed] == ["while away 0", "while away 1", "while away 2"]

            live = await post(room, alice, "back live")
            frame = await again.receive()
            assert (frame["seq"], frame["text"]) == (live.seq, "back live")
            assert await again.nothing()  # no duplicate of anything
        finally:
            await again.close()

    run(scenario)


def test_a_live_event_ahead_of_the_client_is_preceded_by_the_messages_in_between():
    alice = make_user("alice")
    room = make_room(alice)
    cookie = cookie_for(alice)

    async def scenario():
        socket = Socket(room.slug, cookie)
        try:
            assert await socket.open()
            await socket.hello(room.last_message_seq)
            # Three posts commit, but only the last broadcast arrives first (broadcasts
            # from different processes can overtake each other).
            layer = get_channel_layer()
            written = []
            for text in ("one", "two", "three"):
                written.append(await database_sync_to_async(_write_without_broadcast)(room, alice, text))
            last = written[-1]
            frame = await database_sync_to_async(events.message_frame)(last)
            await layer.group_send(events.room_group(room.pk), {"type": events.MESSAGE_POSTED, "seq": last.seq, "frame": frame})
            received = [await socket.receive() for _ in range(3)]
            assert [f["text"] for f in received] == ["one", "two", "three"]
            assert [f["seq"] for f in received] == [m.seq for m in written]
            # The late broadcasts of "one" and "two" are duplicates now and are dropped.
            for message in written[:2]:
                frame = await database_sync_to_async(events.message_frame)(message)
                await layer.group_send(events.room_group(room.pk), {"type": events.MESSAGE_POSTED, "seq": message.seq, "frame": frame})
            assert await socket.nothing()
        finally:
            await socket.close()

    run(scenario)


def _write_without_broadcast(room: Room, author, text: str) -> Message:
    room.refresh_from_db()
    seq = room.last_message_seq + 1
    Room.objects.filter(pk=room.pk).update(last_message_seq=seq)
    return Message.objects.select_related("author", "agent").get(
        pk=Message.objects.create(room=room, seq=seq, kind="chat", author=author, text=text).pk
    )


def test_a_non_member_is_closed_with_4403_and_sees_nothing():
    owner, stranger = make_user(), make_user()
    room = make_room(owner)
    cookie = cookie_for(stranger)

    async def scenario():
        socket = Socket(room.slug, cookie)
        assert await socket.open()
        assert await socket.close_code() == CLOSE_FORBIDDEN
        await socket.close()

    run(scenario)


def test_an_anonymous_visitor_and_a_missing_room_are_closed_with_4403():
    owner = make_user()
    room = make_room(owner)
    cookie = cookie_for(owner)

    async def scenario():
        for socket in (Socket(room.slug, None), Socket("no-such-room", cookie)):
            assert await socket.open()
            assert await socket.close_code() == CLOSE_FORBIDDEN
            await socket.close()

    run(scenario)


def test_a_foreign_origin_is_refused_before_the_consumer_runs():
    owner = make_user()
    room = make_room(owner)
    cookie = cookie_for(owner)

    async def scenario():
        socket = Socket(room.slug, cookie, origin=b"http://evil.example")
        assert not await socket.open()
        await socket.close()

    run(scenario)


