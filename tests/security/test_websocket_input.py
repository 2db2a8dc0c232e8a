"""Both websockets against hostile input: ids past what the database holds, deep nesting,
invalid Unicode, binary and oversized frames, foreign origins. Every bad frame gets one
clean error frame; the consumer never crashes (a crash would surface here as an
exception or a 1011 close) and keeps serving afterwards."""

from __future__ import annotations

import json
import random

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings

from hub.asgi import application
from hub.origins import origin_allowed
from sessions.models import Session, Task
from tests.rooms.factories import make_agent, make_room, make_user
from tests.rooms.test_consumers import cookie_for

pytestmark = pytest.mark.django_db(transaction=True)

FRAMES = 1200  # per socket
HUGE = [2**63, 2**64, 10**30, -1, -(2**63) - 1, 10**4000]


def bad_frames(rng: random.Random, *, room: bool) -> list[tuple[str, object]]:
    """(kind, frame) pairs; a str frame is sent as text, bytes as a binary frame."""
    limit = 6 * settings.ATRIUM_MAX_MESSAGE_BYTES + 1024 if room else 1024

    def huge() -> int:
        return rng.choice(HUGE) if rng.random() < 0.7 else rng.randint(2**63, 2**70)

    def nested() -> str:
        depth = rng.choice([9, 20, 500, 5000, 50_000])
        opener = rng.choice(["[", '{"a":'])
        closer = "]" if opener == "[" else "}"
        return '{"type": "chat", "text": ' + opener * depth + "1" + closer * depth + "}"

    makers = {
        "huge last_seq": lambda: json.dumps({"type": "hello", "last_seq": huge()}),
        "huge steer agent": lambda: json.dumps({"type": "steer", "agent": huge(), "text": "x"}),
        "huge digits": lambda: '{"type": "steer", "agent": ' + "9" * rng.randint(20, 6000) + ', "text": "x"}',
        "deep nesting": nested,
        "lone surrogate": lambda: '{"type": "chat", "text": "a\\ud800b' + "\\udfff" * rng.randint(0, 3) + '"}',
        "surrogate type": lambda: '{"type": "\\udc80' + "x" * rng.randint(0, 50) + '"}',
        "binary": lambda: bytes(rng.randrange(256) for _ in range(rng.randint(1, 64))),
        "over the limit": lambda: json.dumps({"type": "chat", "text": "x" * (limit + rng.randint(1, 500))}),
        "not json": lambda: rng.choice(["{", "[1,", "nul", '{"type": }', "\x00", "{'type': 'hello'}"]),
        "not an object": lambda: json.dumps(rng.choice([[1, 2], "hello", 3, None, True])),
        "wrong type": lambda: json.dumps({"type": rng.choice([1, None, ["hello"], {"a": 1}])}),
        "unknown type": lambda: json.dumps({"type": rng.choice(["delete", "admin", "", "HELLO"])}),
        "bool id": lambda: json.dumps({"type": "steer", "agent": True, "text": "x"}),
        "zero id": lambda: json.dumps({"type": "steer", "agent": 0, "text": "x"}),
        "float id": lambda: json.dumps({"type": "steer", "agent": 1.5, "text": "x"}),
        "nul text": lambda: json.dumps({"type": "chat", "text": "a\x00b"}),
        "unassigned agent": lambda: json.dumps({"type": "steer", "agent": rng.randint(10**6, 2**63 - 1),
                                                "text": "x"}),
        "bad last_seq": lambda: json.dumps({"type": "hello", "last_seq": rng.choice(["5", -3, 1.0, None])}),
    }
    if not room:  # the session socket only takes hello
        makers["chat on a stream"] = lambda: json.dumps({"type": "chat", "text": "x"})
    kinds = sorted(makers)
    return [(kind, makers[kind]()) for kind in (rng.choice(kinds) for _ in range(FRAMES))]


async def _fuzz(communicator: WebsocketCommunicator, frames) -> dict[str, int]:
    codes: dict[str, int] = {}
    for kind, frame in frames:
        if isinstance(frame, bytes):
            await communicator.send_to(bytes_data=frame)
        else:
            await communicator.send_to(text_data=frame)
        reply = await communicator.receive_json_from(timeout=5)
        assert reply["type"] == "error", (kind, reply)
        assert reply["message"] and reply["code"] != "internal", (kind, reply)
        codes[reply["code"]] = codes.get(reply["code"], 0) + 1
    assert await communicator.receive_nothing(timeout=0.2)
    return codes


def _socket(path: str, cookie: bytes) -> WebsocketCommunicator:
    return WebsocketCommunicator(application, path, headers=[
        (b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1"), (b"cookie", cookie)])


def test_fuzzing_the_room_socket_gives_an_error_for_each_frame_and_no_crash():
    owner = make_user("fuzzer")
    agent = make_agent("target")
    room = make_room(owner, agents=[agent])
    cookie = cookie_for(owner)
    frames = bad_frames(random.Random(9), room=True)

    async def scenario():
        socket = _socket(f"/ws/rooms/{room.slug}/", cookie)
        assert (await socket.connect(timeout=5))[0]
        try:
            codes = await _fuzz(socket, frames)
            assert {"too_large", "too_deep", "bad_request", "bad_json"} <= set(codes)
            # Still serving: a hello replays, a chat posts and comes back.
            await socket.send_to(text_data=json.dumps({"type": "hello", "last_seq": 0}))
            while (await socket.receive_json_from(timeout=5))["type"] != "synced":
                pass
            await socket.send_to(text_data=json.dumps({"type": "steer", "agent": agent.pk, "text": "still here"}))
            frame = await socket.receive_json_from(timeout=5)
            assert (frame["type"], frame["text"]) == ("message", "still here")
        finally:
            await socket.disconnect()

    async_to_sync(scenario)()


def test_fuzzing_the_session_socket_gives_an_error_for_each_frame_and_no_crash():
    owner = make_user("fuzzer")
    agent = make_agent("target")
    room = make_room(owner, agents=[agent])
    session = Session.objects.create(task=Task.objects.create(room=room, title="t", objective="o"), agent=agent)
    cookie = cookie_for(owner)
    frames = bad_frames(random.Random(11), room=False)

    async def scenario():
        socket = _socket(f"/ws/sessions/{session.pk}/", cookie)
        assert (await socket.connect(timeout=5))[0]
        try:
            codes = await _fuzz(socket, frames)
            assert {"too_large", "too_deep", "bad_request", "bad_json", "unknown_type"} <= set(codes)
            await socket.send_to(text_data=json.dumps({"type": "hello", "last_seq": 0}))
            assert (await socket.receive_json_from(timeout=5))["type"] == "synced"
        finally:
            await socket.disconnect()

    async_to_sync(scenario)()


@pytest.mark.parametrize("path", ["/ws/sessions/9223372036854775808/", "/ws/sessions/0/",
                                  "/ws/sessions/99999999999999999999999/", "/ws/rooms/%00/"])
def test_out_of_range_ids_in_socket_paths_are_refused_cleanly(path):
    owner = make_user("pathy")
    cookie = cookie_for(owner)

    async def scenario():
        socket = _socket(path, cookie)
        connected, _ = await socket.connect(timeout=5)
        assert not connected
        await socket.disconnect()

    async_to_sync(scenario)()


@pytest.mark.parametrize(("origin", "host", "allowed"), [
    ("http://127.0.0.1:8000", "127.0.0.1:8000", True),
    ("http://127.0.0.1:9999", "127.0.0.1:8000", False),  # same host, another port: another site
    ("https://127.0.0.1:8000", "127.0.0.1:8000", False),  # another scheme
    ("http://127.0.0.1", "127.0.0.1:80", True),  # default ports are the same port
    ("http://localhost:8000", "127.0.0.1:8000", False),
    ("http://evil.example:8000", "evil.example:8000", False),  # a host the hub does not serve
    ("null", "127.0.0.1:8000", False),
    ("http://user@127.0.0.1:8000", "127.0.0.1:8000", False),
    ("http://127.0.0.1:8000/path", "127.0.0.1:8000", False),
    ("http://127.0.0.1:notaport", "127.0.0.1:8000", False),
])
def test_origins_are_compared_by_scheme_host_and_port(origin, host, allowed):
    assert origin_allowed(origin, host_header=host, secure=False) is allowed


def test_trusted_origins_are_compared_by_scheme_host_and_port(settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://hub.example", "https://*.corp.example:8443"]
    assert origin_allowed("https://hub.example", host_header="10.0.0.1:8000", secure=False)
    assert origin_allowed("https://hub.example:443", host_header="10.0.0.1:8000", secure=False)
    assert not origin_allowed("https://hub.example:8443", host_header="10.0.0.1:8000", secure=False)
    assert not origin_allowed("http://hub.example", host_header="10.0.0.1:8000", secure=False)
    assert origin_allowed("https://a.corp.example:8443", host_header="x", secure=False)
    assert not origin_allowed("https://a.corp.example", host_header="x", secure=False)
    assert not origin_allowed("https://evilcorp.example:8443", host_header="x", secure=False)


@pytest.mark.parametrize("origin", [b"http://127.0.0.1:1234", b"https://127.0.0.1", None])
def test_the_socket_refuses_another_port_scheme_or_no_origin(origin):
    owner = make_user("originy")
    room = make_room(owner)
    cookie = cookie_for(owner)

    async def scenario():
        headers = [(b"host", b"127.0.0.1"), (b"cookie", cookie)] + ([(b"origin", origin)] if origin else [])
        socket = WebsocketCommunicator(application, f"/ws/rooms/{room.slug}/", headers=headers)
        connected, _ = await socket.connect(timeout=5)
        assert not connected
        await socket.disconnect()

    async_to_sync(scenario)()
