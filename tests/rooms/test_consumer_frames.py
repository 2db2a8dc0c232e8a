"""The room websocket's frames from a person: bad frames answered and the socket kept, a
viewer refused, a removed member cut off, a steer updated in place, a frame sent again
after a reconnect stored once."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from django.conf import settings

from rooms import services
from rooms.consumers import CLOSE_FORBIDDEN
from rooms.models import Message
from tests.rooms.factories import make_agent, make_room, make_user
from tests.rooms.test_consumers import Socket, cookie_for, count_messages, post, run

pytestmark = pytest.mark.django_db(transaction=True)


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
            await database_sync_to_async(services.message_mark_delivered)(message=steer)
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
