"""Websockets that sit idle stay open: a room socket and a session socket are held for
60 s without a frame against a real Daphne and the real channel layer, on the embedded
Redis and on a Redis server, then still carry what happens next. Idle reads once timed
out after 5 s (redis-py's read timeout equal to the channel layer's blocking read)."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
import redis
import websockets
from channels.layers import channel_layers
from django.conf import settings
from django.db import transaction
from django.test import Client, override_settings

from hub.embedded import EmbeddedRedis
from hub.redis_options import channel_layer_host
from sessions.events import session_event_append
from sessions.models import Session, Task
from tests.conftest import start_daphne
from tests.rooms.factories import make_agent, make_room, make_user

IDLE_SECONDS = 60
SERVER_REDIS = "redis://127.0.0.1:6379/0"


@pytest.fixture(params=["embedded", "server"])
def redis_url(request, tmp_path):
    if request.param == "embedded":
        embedded = EmbeddedRedis(Path(f"/tmp/atrium-idle-{uuid.uuid4().hex[:8]}.sock")).start()
        yield embedded.url
        embedded.stop()
        return
    try:
        redis.Redis.from_url(SERVER_REDIS, socket_timeout=2).ping()
    except redis.RedisError:
        pytest.skip("no Redis server on 127.0.0.1:6379")
    yield SERVER_REDIS


@pytest.fixture
def layer_on(redis_url):
    """This test process broadcasts on the same Redis and prefix as the Daphne it starts."""
    prefix = f"idle-{uuid.uuid4().hex[:8]}"
    layers = {"default": {"BACKEND": "hub.channel_layer.AuthenticatedChannelLayer", "CONFIG": {
        **settings.CHANNEL_LAYERS["default"]["CONFIG"],  # the frames' encryption key among them
        "hosts": [channel_layer_host(redis_url, read_timeout=settings.REDIS_SOCKET_TIMEOUT)], "prefix": prefix}}}
    channel_layers.backends.clear()
    with override_settings(CHANNEL_LAYERS=layers):
        yield prefix
    channel_layers.backends.clear()


@pytest.fixture
def daphne_on(redis_url, layer_on, transactional_db, tmp_path):
    server = start_daphne(tmp_path / "daphne.log", REDIS_URL=redis_url, CHANNELS_PREFIX=layer_on)
    try:
        yield server
    finally:
        server.hub_process.stop()


def healthz(url: str) -> dict:
    """/healthz's channel-layer check (the whole answer may be 503: no worker runs here)."""
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=30) as response:
            body = response.read()
    except urllib.error.HTTPError as refused:
        body = refused.read()
    return json.loads(body)["checks"]["channel_layer"]


def test_idle_room_and_session_sockets_stay_open_for_a_minute(daphne_on):
    owner = make_user("idle-owner")
    agent = make_agent("idler", model="replay:demo-fix-median.json")
    room = make_room(owner, "Idle room", agents=[agent])
    task = Task.objects.create(room=room, title="Wait", objective="Nothing")
    session = Session.objects.create(task=task, agent=agent, state="running")
    client = Client()
    client.force_login(owner)
    headers = {"Cookie": f"sessionid={client.cookies['sessionid'].value}", "Origin": daphne_on.url}
    base = daphne_on.url.replace("http", "ws")

    def append_event() -> None:
        with transaction.atomic():
            session_event_append(session, "model.reply", {"step": 1, "text": "after the idle minute"})

    async def hold() -> dict:
        # ping_interval=None: like a browser, the client never pings; Daphne does.
        async with websockets.connect(f"{base}/ws/rooms/{room.slug}/", additional_headers=headers,
                                      ping_interval=None) as room_ws, \
                   websockets.connect(f"{base}/ws/sessions/{session.pk}/", additional_headers=headers,
                                      ping_interval=None) as session_ws:
            for ws, last_seq in ((room_ws, room.last_message_seq), (session_ws, 0)):
                await ws.send(json.dumps({"type": "hello", "last_seq": last_seq}))
                assert json.loads(await ws.recv())["type"] == "synced"
            closes = 0
            for ws in (room_ws, session_ws):
                try:
                    frame = await asyncio.wait_for(ws.recv(), IDLE_SECONDS / 2)
                    raise AssertionError(f"unexpected frame while idle: {frame}")
                except TimeoutError:
                    pass
                except websockets.ConnectionClosed:
                    closes += 1
            # While both sockets wait in the layer's blocking read, /healthz's round trip
            # through the layer still answers (it timed out: "degraded" whenever a page was open).
            health = [await asyncio.to_thread(healthz, daphne_on.url) for _ in range(3)]
            # After the idle minute both still work both ways.
            await room_ws.send(json.dumps({"type": "chat", "text": "still here"}))
            chat = json.loads(await asyncio.wait_for(room_ws.recv(), 10))
            await asyncio.to_thread(append_event)
            event = json.loads(await asyncio.wait_for(session_ws.recv(), 10))
            return {"closes": closes, "chat": chat, "event": event, "health": health}

    seen = asyncio.run(hold())
    assert seen["closes"] == 0
    assert all(check["ok"] for check in seen["health"]), seen["health"]
    assert seen["chat"]["type"] == "message" and "still here" in seen["chat"]["html"]
    assert seen["event"]["type"] == "event" and seen["event"]["payload"]["text"] == "after the idle minute"
    daphne_on.hub_process.check_alive()
    log = daphne_on.hub_process.log_path.read_text(errors="replace")
    assert "Traceback" not in log and "Timeout reading" not in log, log[-3000:]
