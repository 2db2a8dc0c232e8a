"""Benchmark: 200 websockets connecting to one Daphne at once (issue 18).

Run: ./.venv/bin/pytest -m bench tests/bench/test_connect_storm.py -s

Each socket connects to a room, says hello, and must get its replay and "synced"; a
socket that errors, is closed, or gets an error frame first counts as a crash, and so
does every "Exception inside application" in Daphne's log. The baseline, in the same
run, is the web process as it was configured before: a new database connection per
hop (DB_CONN_MAX_AGE=0) and redis-py's 100-connection pool for the channel layer.
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


async def storm(url: str, cookie: str) -> tuple[int, float]:
    async def one() -> bool:
        try:
            async with connect(url, additional_headers={"Cookie": cookie}, origin="http://127.0.0.1",
                               open_timeout=60) as socket:
                await socket.send(json.dumps({"type": "hello", "last_seq": 0}))
                while True:
                    frame = json.loads(await asyncio.wait_for(socket.recv(), 60))
                    if frame["type"] == "synced":
                        return True
                    if frame["type"] == "error":
                        return False
        except Exception:
            return False

    started = time.perf_counter()
    results = await asyncio.gather(*(one() for _ in range(SOCKETS)))
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
    for name, env in (("before", {"DB_CONN_MAX_AGE": "0", "CHANNEL_LAYER_MAX_CONNECTIONS": "100"}), ("now", {})):
        server = start_daphne(tmp_path / f"daphne-{name}.log", **env)
        try:
            url = f"ws://{server.host}:{server.port}/ws/rooms/{room.slug}/"
            failed, seconds = asyncio.run(storm(url, cookie))
        finally:
            server.hub_process.stop()
        crashes = server.hub_process.log_path.read_text(errors="replace").count("Exception inside application")
        figures[name] = (failed, crashes, seconds)
    (before_failed, before_crashes, before_s), (failed, crashes, seconds) = figures["before"], figures["now"]
    print(f"\n{SOCKETS} simultaneous connects, hello and replay of 51 messages"
          f"\n  before: {before_failed} sockets failed, {before_crashes} consumer crashes, {before_s:.2f} s"
          f"\n  now:    {failed} sockets failed, {crashes} consumer crashes, {seconds:.2f} s"
          f"\n  ratio now/before: time {seconds / before_s:.3f}")
    assert failed == 0 and crashes == 0
