"""The room websocket, through the full ASGI stack (origin check, session auth, routing)
and the real Redis channel layer.

Each test is a sync pytest function that runs one async scenario with async_to_sync,
so database_sync_to_async inside the consumer shares the test's database connection.
"""

from __future__ import annotations

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
from rooms import events, services
from rooms.consumers import CLOSE_FORBIDDEN
from rooms.models import Message, Room
from tests.rooms.factories import make_agent, make_room, make_user

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
        """Say hello; return the replayed message frames (the "synced" frame ends them)."""
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


def test_every_bad_frame_gets_an_error_and_the_connection_keeps_serving():
    owner = make_user("owner")
    assigned, elsewhere = make_agent("assigned"), make_agent("elsewhere")
    room = make_room(owner, agents=[assigned])
    cookie = cookie_for(owner)
    before = count_messages(room)
    limit = settings.ATRIUM_MAX_MESSAGE_BYTES

    async def scenario():
        socket = Socket(room.slug, cookie)
        try:
            assert await socket.open()
            await socket.hello(room.last_message_seq)
            bad = [
                ("this is not json", "bad_json"),
                ("[1, 2]", "bad_request"),
                ('{"text": "no type"}', "bad_request"),
                (json.dumps({"type": "shout", "text": "hi"}), "unknown_type"),
                (json.dumps({"type": "chat", "text": ""}), "empty"),
                (json.dumps({"type": "chat", "text": "   \n "}), "empty"),
                (json.dumps({"type": "chat"}), "empty"),
                (json.dumps({"type": "chat", "text": 42}), "bad_request"),
                (json.dumps({"type": "chat", "text": "x" * (limit + 1)}), "too_large"),
                (json.dumps({"type": "chat", "text": "€" * (limit // 3 + 1)}), "too_large"),
                ("x" * (7 * limit), "too_large"),
                (json.dumps({"type": "steer", "agent": elsewhere.pk, "text": "stop"}), "unknown_agent"),
                (json.dumps({"type": "steer", "agent": 999999, "text": "stop"}), "unknown_agent"),
                (json.dumps({"type": "steer", "agent": "assigned", "text": "stop"}), "bad_request"),
                (json.dumps({"type": "steer", "text": "stop"}), "bad_request"),
                (json.dumps({"type": "hello", "last_seq": 0}), "bad_request"),  # hello twice
            ]
            for text, code in bad:
                await socket.send_raw(text)
                await socket.expect_error(code)
            await socket.communicator.send_to(bytes_data=b"\x00binary")
            await socket.expect_error("bad_json")

            # Still serving: a good chat and a good steer go through.
            await socket.send(type="chat", text="still here")
            assert (await socket.receive())["text"] == "still here"
            await socket.send(type="steer", agent=assigned.pk, text="look at the failing test")
            steer = await socket.receive()
            assert (steer["kind"], steer["agent"], steer["delivered_at"]) == ("steer", assigned.pk, None)
            assert "assigned" in steer["html"] and "not delivered yet" in steer["html"]
        finally:
            await socket.close()

    run(scenario)
    assert count_messages(room) == before + 2


def test_nul_characters_and_lone_surrogates_get_an_error_and_the_connection_keeps_serving():
    """PostgreSQL refuses NUL in text columns, and a lone surrogate cannot be encoded as
    UTF-8 at all: both are refused before they reach the database or the encoder."""
    owner = make_user("owner")
    agent = make_agent("helper")
    room = make_room(owner, agents=[agent])
    cookie = cookie_for(owner)
    before = count_messages(room)

    async def scenario():
        socket = Socket(room.slug, cookie)
        try:
            assert await socket.open()
            await socket.hello(room.last_message_seq)
            # json.dumps writes both as \u escapes, which is how a browser would send them.
            for frame in (
                {"type": "chat", "text": "before\x00after"},
                {"type": "chat", "text": "half a pair \ud83d"},
                {"type": "steer", "agent": agent.pk, "text": "\udc80 stop"},
            ):
                await socket.send_raw(json.dumps(frame))
                error = await socket.expect_error("invalid")
                assert "NUL" in error["message"] or "surrogate" in error["message"]
            # A joined pair is a real character (an emoji) and goes through.
            await socket.send_raw('{"type": "chat", "text": "still here \\ud83d\\ude00"}')
            assert (await socket.receive())["text"] == "still here \U0001f600"
        finally:
            await socket.close()

    run(scenario)
    assert count_messages(room) == before + 1


def test_a_viewer_reads_along_but_every_post_is_refused():
    owner, viewer = make_user("owner"), make_user("viewer")
    agent = make_agent()
    room = make_room(owner, viewers=[viewer], agents=[agent])
    cookie = cookie_for(viewer)
    before = count_messages(room)

    async def scenario():
        socket = Socket(room.slug, cookie)
        try:
            assert await socket.open()
            assert len(await socket.hello(0)) == before
            await socket.send(type="chat", text="may I?")
            await socket.expect_error("forbidden")
            await socket.send(type="steer", agent=agent.pk, text="do this")
            await socket.expect_error("forbidden")
            await post(room, owner, "owners still talk")
            assert (await socket.receive())["text"] == "owners still talk"
        finally:
            await socket.close()

    run(scenario)
    assert count_messages(room) == before + 1


def test_a_removed_member_is_disconnected_and_cannot_post_in_between():
    owner, bob = make_user("owner"), make_user("bob")
    room = make_room(owner, members=[bob])
    cookie = cookie_for(bob)

    async def scenario():
        socket = Socket(room.slug, cookie)
        assert await socket.open()
        await socket.hello(room.last_message_seq)
        await database_sync_to_async(services.membership_remove)(room=room, actor=owner, user_id=bob.pk)
        frame = await socket.receive()  # "owner removed bob." reaches everyone in the group first
        assert frame["kind"] == "system"
        assert await socket.close_code() == CLOSE_FORBIDDEN
        await socket.close()

    run(scenario)
    assert not Message.objects.filter(room=room, author__username="bob").exists()


def test_a_delivered_steer_updates_the_message_in_place():
    owner = make_user("owner")
    agent = make_agent("fixer")
    room = make_room(owner, agents=[agent])
    cookie = cookie_for(owner)

    async def scenario():
        socket = Socket(room.slug, cookie)
        try:
            assert await socket.open()
            await socket.hello(room.last_message_seq)
            steer = await post(room, owner, "rename the module", kind="steer", agent=agent)
            assert (await socket.receive())["seq"] == steer.seq
            await database_sync_to_async(services.message_mark_delivered)(message=steer, session=None)
            update = await socket.receive()
            assert update["type"] == "message.updated"
            assert update["seq"] == steer.seq and update["delivered_at"]
            assert f'id="message-{steer.seq}"' in update["html"] and "delivered" in update["html"]
        finally:
            await socket.close()

    run(scenario)


def test_a_frame_sent_again_after_a_reconnect_is_stored_once_and_acknowledged_both_times():
    """The page cannot know whether a frame sent just before a drop arrived, so it sends
    it again with the same id after reconnecting: one message, two acks with its seq."""
    alice, bob = make_user("alice"), make_user("bob")
    room = make_room(alice, members=[bob])
    alice_cookie, bob_cookie = cookie_for(alice), cookie_for(bob)

    async def scenario():
        first, watcher = Socket(room.slug, alice_cookie), Socket(room.slug, bob_cookie)
        assert await first.open() and await watcher.open()
        await first.hello(room.last_message_seq)
        await watcher.hello(room.last_message_seq)
        await first.send(type="chat", text="typed before the drop", id="f-1")
        # The ack comes straight back; the message through the channel layer: either first.
        frames = {frame["type"]: frame for frame in [await first.receive(), await first.receive()]}
        stored = frames["message"]
        assert frames["ack"] == {"type": "ack", "id": "f-1", "seq": stored["seq"]}
        await first.close()

        again = Socket(room.slug, alice_cookie)
        try:
            assert await again.open()
            await again.hello(stored["seq"])
            await again.send(type="chat", text="typed before the drop", id="f-1")
            assert await again.receive() == {"type": "ack", "id": "f-1", "seq": stored["seq"]}
            await again.send(type="chat", text="x", id="not a valid id!")
            assert (await again.expect_error("bad_request"))["id"] == "not a valid id!"
            assert await again.nothing()
            # The other member saw the message once.
            assert (await watcher.receive())["seq"] == stored["seq"]
            assert await watcher.nothing()
        finally:
            await again.close()
            await watcher.close()

    run(scenario)
    assert Message.objects.filter(room=room, text="typed before the drop").count() == 1


def test_the_same_frame_id_from_another_person_is_another_message():
    alice, bob = make_user("alice"), make_user("bob")
    room = make_room(alice, members=[bob])
    services.message_post(room=room, author=alice, kind="chat", text="mine", client_key="k1")
    services.message_post(room=room, author=bob, kind="chat", text="his", client_key="k1")
    again = services.message_post(room=room, author=alice, kind="chat", text="mine", client_key="k1")
    assert again.text == "mine"
    assert list(Message.objects.filter(room=room, kind="chat").values_list("text", flat=True)) == ["mine", "his"]
