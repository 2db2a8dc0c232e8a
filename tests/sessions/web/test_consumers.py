"""The session websocket, and the room websocket's session notices, through the full
ASGI stack (origin check, session auth, routing) and the real Redis channel layer.

Each test runs one async scenario with async_to_sync, so database_sync_to_async inside
the consumer shares the test's database connection.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from hub.asgi import application
from rooms import broadcast
from rooms.streams import CLOSE_FORBIDDEN
from sessions.events import SESSION_EVENT, event_frame, session_group
from sessions.models import SessionEvent
from sessions.services.lifecycle import session_cancel, session_start
from tests.sessions.web.conftest import append, session_in

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT = 3
STEP = {"step": 1, "projection": 100, "anchored": False, "trigger": 800, "ceiling": 900, "window": 1000,
        "postponed": 0, "note": ""}


def cookie_for(user) -> bytes:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}".encode()


class Socket:
    def __init__(self, path: str, cookie: bytes | None) -> None:
        headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
        if cookie:
            headers.append((b"cookie", cookie))
        self.communicator = WebsocketCommunicator(application, path, headers=headers)

    async def open(self) -> bool:
        connected, _ = await self.communicator.connect(timeout=TIMEOUT)
        return connected

    async def send(self, **frame: Any) -> None:
        await self.communicator.send_to(text_data=json.dumps(frame))

    async def receive(self) -> dict[str, Any]:
        return await self.communicator.receive_json_from(timeout=TIMEOUT)

    async def hello(self, last_seq: int = 0) -> list[dict[str, Any]]:
        await self.send(type="hello", last_seq=last_seq)
        replayed = []
        while (frame := await self.receive())["type"] != "synced":
            replayed.append(frame)
        assert frame["last_seq"] == (replayed[-1]["seq"] if replayed else last_seq)
        return replayed

    async def nothing(self) -> bool:
        await asyncio.to_thread(broadcast.flush)  # what was queued has left: it would be here
        return await self.communicator.receive_nothing(timeout=0.3)

    async def close_code(self) -> int:
        output = await self.communicator.receive_output(timeout=TIMEOUT)
        assert output["type"] == "websocket.close", output
        return output["code"]

    async def close(self) -> None:
        await self.communicator.disconnect()


def session_socket(session, cookie: bytes) -> Socket:
    return Socket(f"/ws/sessions/{session.pk}/", cookie)


async def add(session, kind: str, payload: dict[str, Any]) -> SessionEvent:
    return await database_sync_to_async(append)(session, kind, payload)


def test_a_reconnect_replays_events_after_last_seq_then_streams_live_ones_once(task, agent, viewer):
    session = session_in(task, agent, "running")  # seq 1
    append(session, "step.started", STEP)  # seq 2
    cookie = cookie_for(viewer)  # viewers watch too

    async def scenario():
        first = session_socket(session, cookie)
        assert await first.open()
        seen = await first.hello(0)
        assert [(f["seq"], f["kind"]) for f in seen] == [(1, "session.state_changed"), (2, "step.started")]
        assert 'id="event-2"' in seen[1]["html"] and "step 1" in seen[1]["html"] and seen[1]["refresh"] is True
        await first.close()

        missed = [await add(session, "tool.result", {"tool": "read_file", "purpose": f"read part {i}",
                                                     "served": "text", "tokens": 5, "preview": "x"})
                  for i in range(3)]
        again = session_socket(session, cookie)
        try:
            assert await again.open()
            replayed = await again.hello(2)
            assert [f["seq"] for f in replayed] == [e.seq for e in missed] == [3, 4, 5]
            assert "read part 2" in replayed[2]["html"] and replayed[2]["refresh"] is False

            live = await add(session, "verify", {"number": 1, "line": "verify #1: pytest → exit 0 (9 ms)",
                                                 "exit_code": 0, "output": ""})
            frame = await again.receive()
            assert (frame["type"], frame["seq"], frame["kind"]) == ("event", live.seq, "verify")
            assert "verify #1: pytest → exit 0 (9 ms)" in frame["html"]
            assert frame["payload"]["exit_code"] == 0
            assert await again.nothing()  # no duplicate of anything
        finally:
            await again.close()

    async_to_sync(scenario)()


def test_a_live_event_ahead_of_the_client_is_preceded_by_the_events_in_between(task, agent, member):
    session = session_in(task, agent, "running")
    cookie = cookie_for(member)

    async def scenario():
        socket = session_socket(session, cookie)
        try:
            assert await socket.open()
            await socket.hello(1)
            # Three events commit, but only the last broadcast arrives (broadcasts from
            # different processes can overtake each other); then the late ones.
            written = [await database_sync_to_async(SessionEvent.objects.create)(
                session=session, seq=seq, kind="nudge", payload={"kind": "promise"}) for seq in (2, 3, 4)]
            layer = get_channel_layer()
            for event in (written[2], written[0], written[1]):
                await layer.group_send(session_group(session.pk), {"type": SESSION_EVENT, "frame": event_frame(event)})
            received = [await socket.receive() for _ in range(3)]
            assert [f["seq"] for f in received] == [2, 3, 4]
            assert all("asked to do it or finish" in f["html"] for f in received)
            assert await socket.nothing()
        finally:
            await socket.close()

    async_to_sync(scenario)()


def test_people_outside_the_room_are_closed_with_4403(task, agent, stranger):
    session = session_in(task, agent, "running")
    cookie = cookie_for(stranger)

    async def scenario():
        for socket in (session_socket(session, cookie), Socket(f"/ws/sessions/{session.pk}/", None),
                       Socket("/ws/sessions/987654/", cookie)):
            try:
                assert await socket.open()
                assert await socket.close_code() == CLOSE_FORBIDDEN
            finally:
                await socket.close()

    async_to_sync(scenario)()


def test_bad_frames_get_an_error_and_the_socket_keeps_streaming(task, agent, member):
    session = session_in(task, agent, "running")
    cookie = cookie_for(member)

    async def scenario():
        socket = session_socket(session, cookie)
        try:
            assert await socket.open()
            for raw, code in [("not json", "bad_json"), (json.dumps({"type": "steer", "text": "x"}), "unknown_type"),
                              (json.dumps({"type": "hello", "last_seq": -1}), "bad_request"),
                              (json.dumps({"type": "hello", "last_seq": "x" * 2000}), "too_large")]:
                await socket.communicator.send_to(text_data=raw)
                frame = await socket.receive()
                assert (frame["type"], frame["code"]) == ("error", code), frame
                assert frame["message"]
            assert [f["seq"] for f in await socket.hello(0)] == [1]
            await socket.send(type="hello", last_seq=0)
            assert (await socket.receive())["code"] == "bad_request"  # hello only once
            live = await add(session, "nudge", {"kind": "unchecked"})
            assert (await socket.receive())["seq"] == live.seq
        finally:
            await socket.close()

    async_to_sync(scenario)()
    assert SessionEvent.objects.filter(session=session).count() == 2  # the socket wrote nothing


def test_the_room_socket_tells_the_page_when_a_session_of_the_room_changes_state(room, task, agent, member, owner):
    cookie = cookie_for(member)

    async def scenario():
        socket = Socket(f"/ws/rooms/{room.slug}/", cookie)
        try:
            assert await socket.open()
            await socket.hello(room.last_message_seq)
            session = await database_sync_to_async(session_start)(task=task, agent=agent, actor=owner)
            frame = await socket.receive()
            assert frame == {"type": "session.changed", "session": session.pk, "state": "queued"}
            await database_sync_to_async(session_cancel)(session=session, actor=owner)
            frame = await socket.receive()
            assert frame == {"type": "session.changed", "session": session.pk, "state": "cancelled"}
            # Chat still flows on the same socket: the new handler did not break the consumer.
            await socket.send(type="chat", text="still here")
            assert (await socket.receive())["text"] == "still here"
        finally:
            await socket.close()

    async_to_sync(scenario)()


def test_a_room_socket_before_hello_gets_no_session_notices(room, task, agent, member, owner):
    cookie = cookie_for(member)

    async def scenario():
        socket = Socket(f"/ws/rooms/{room.slug}/", cookie)
        try:
            assert await socket.open()
            await database_sync_to_async(session_start)(task=task, agent=agent, actor=owner)
            assert await socket.nothing()
        finally:
            await socket.close()

    async_to_sync(scenario)()


def test_a_person_removed_from_the_room_is_closed_out_of_its_sessions(room, task, agent, member, owner):
    from rooms.services import membership_remove

    session = session_in(task, agent, "running")
    cookie = cookie_for(member)

    async def scenario():
        socket = session_socket(session, cookie)
        assert await socket.open()
        await socket.hello(0)
        await database_sync_to_async(membership_remove)(room=room, actor=owner, user_id=member.pk)
        assert await socket.close_code() == CLOSE_FORBIDDEN
        await socket.close()

    async_to_sync(scenario)()


def test_a_socket_opened_before_removal_cannot_replay_the_log_after_it(room, task, agent, member, owner):
    from rooms.services import membership_remove

    session = session_in(task, agent, "running")
    cookie = cookie_for(member)

    async def scenario():
        socket = session_socket(session, cookie)
        assert await socket.open()
        await database_sync_to_async(membership_remove)(room=room, actor=owner, user_id=member.pk)
        await socket.send(type="hello", last_seq=0)
        assert await socket.close_code() == CLOSE_FORBIDDEN
        await socket.close()

    async_to_sync(scenario)()
