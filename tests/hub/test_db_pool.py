"""The web process draws its PostgreSQL connections from a pool (DB_POOL_SIZE): page
loads and websocket frames against a real Daphne reuse a few server connections
instead of opening one each (PostgreSQL counts every connection ever opened to a
database in pg_stat_database.sessions)."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.urls import reverse
from websockets.asyncio.client import connect

from rooms.models import Message
from tests.conftest import start_daphne
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="a pool of PostgreSQL connections")

PAGES, FRAMES = 15, 15


def sessions_opened() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


async def post_chats(url: str, cookie: str, origin: str) -> list[int]:
    seqs = []
    async with connect(url, additional_headers={"Cookie": cookie}, origin=origin) as socket:
        for n in range(FRAMES):
            await socket.send(json.dumps({"type": "chat", "text": f"hello {n}", "id": f"pool-{n}"}))
            while (frame := json.loads(await socket.recv()))["type"] != "ack":
                pass
            seqs.append(frame["seq"])
    return seqs


def serve_pages_and_frames(server, room, cookie) -> None:
    page = f"{server.url}{reverse('room', args=[room.slug])}"
    for _ in range(PAGES):
        request = urllib.request.Request(page, headers={"Cookie": cookie})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200 and b"Pool room" in response.read()
    seqs = asyncio.run(post_chats(f"ws://{server.host}:{server.port}/ws/rooms/{room.slug}/", cookie, server.url))
    assert len(set(seqs)) == FRAMES
    assert Message.objects.filter(room=room, kind="chat").count() == FRAMES


@pytest.fixture
def room_and_cookie(transactional_db):
    owner = make_user("olga")
    room = make_room(owner, "Pool room", agents=[make_agent("fixer")])
    client = Client()
    client.force_login(owner)
    return room, f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


@pytest.mark.parametrize(("pool_size", "at_most", "at_least"), [("3", 3, 0), ("0", None, PAGES + FRAMES)])
def test_the_web_process_reuses_a_few_pooled_connections(room_and_cookie, tmp_path, pool_size, at_most, at_least):
    room, cookie = room_and_cookie
    server = start_daphne(tmp_path / "daphne.log", DB_POOL_SIZE=pool_size)
    try:
        before = sessions_opened()
        serve_pages_and_frames(server, room, cookie)
    finally:
        server.hub_process.stop()
    # A server process reports its connection when it flushes its statistics, at the
    # latest when it exits: the pool's exit with Daphne.
    opened = -1
    for _ in range(40):
        time.sleep(0.05)
        opened, settled = sessions_opened() - before, opened
        if opened == settled:
            break
    if at_most is not None:
        assert opened <= at_most, f"{opened} connections opened with a pool of {pool_size}"
    assert opened >= at_least, f"{opened} connections opened without a pool"
