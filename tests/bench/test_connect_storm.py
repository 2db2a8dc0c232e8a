"""Benchmark: 200 websockets connecting to one Daphne at once (issue 18).

Run: ./.venv/bin/pytest -m bench tests/bench/test_connect_storm.py -s

Each socket connects to a room, says hello, and must get its replay and "synced"; a
socket that errors, is closed, or gets an error frame first counts as a crash, and so
does every "Exception inside application" in Daphne's log. The baselines, in the same
run: the web process as it was configured before (redis-py's 100-connection pool for the
channel layer), and with database connections reused (DB_CONN_MAX_AGE=60, faster, but
Django advises against it under ASGI: HTTP requests' threads are new each time and a
kept connection outlives them; the default stays 0). The code changes of the web
process, such as no thread hop per frame, are in all three.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from django.conf import settings
from django.test import Client
from websockets.asyncio.client import connect

from rooms.services import message_post
from tests.conftest import start_daphne
from tests.rooms.factories import make_room, make_user

pytestmark = [pytest.mark.bench, pytest.mark.django_db(transaction=True)]

SOCKETS = 200


async def storm(url: str, cookie: str, origin: str) -> tuple[int, float]:
    errors: list[str] = []

    async def one() -> bool:
        try:
            async with connect(url, additional_headers={"Cookie": cookie}, origin=origin,
                               open_timeout=60) as socket:
                await socket.send(json.dumps({"type": "hello", "last_seq": 0}))
                while True:
                    frame = json.loads(await asyncio.wait_for(socket.recv(), 60))
                    if frame["type"] == "synced":
                        return True
                    if frame["type"] == "error":
                        errors.append(str(frame))
                        return False
        except Exception as exc:
            errors.append(repr(exc))
            return False

    started = time.perf_counter()
    results = await asyncio.gather(*(one() for _ in range(SOCKETS)))
    if errors:
        print(f"\n{len(errors)} failed; first: {errors[0][:300]}")
    return results.count(False), time.perf_counter() - started


@pytest.mark.timeout(900)
def test_200_simultaneous_connects(tmp_path):
    owner = make_user()
    room = make_room(owner)
    for n in range(50):
        message_post(room=room, author=owner, kind="chat", text=f"message {n}")
    client = Client()
    client.force_login(owner)
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    figures = {}
    configurations = (
        ("before", {"CHANNEL_LAYER_MAX_CONNECTIONS": "100"}),
        ("connections reused", {"DB_CONN_MAX_AGE": "60"}),
        ("now", {}),
    )
    for n, (name, env) in enumerate(configurations):
        server = start_daphne(tmp_path / f"daphne-{n}.log", **env)
        try:
            url = f"ws://{server.host}:{server.port}/ws/rooms/{room.slug}/"
            failed, seconds = asyncio.run(storm(url, cookie, server.url))
        finally:
            server.hub_process.stop()
        crashes = server.hub_process.log_path.read_text(errors="replace").count("Exception inside application")
        figures[name] = (failed, crashes, seconds)
    print(f"\n{SOCKETS} simultaneous connects, hello and replay of 51 messages")
    for name, (failed, crashes, seconds) in figures.items():
        print(f"  {name}: {failed} sockets failed, {crashes} consumer crashes, {seconds:.2f} s, "
              f"time ratio to before {seconds / figures['before'][2]:.3f}")
    failed, crashes, _ = figures["now"]
    assert failed == 0 and crashes == 0
