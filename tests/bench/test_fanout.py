"""Benchmark: one room's messages fanned out to 50 / 100 / 200 websockets (issue 15).

Run: ./.venv/bin/pytest -m bench tests/bench/test_fanout.py -s
(with DATABASE_URL/REDIS_URL pointing at PostgreSQL and Redis, as CI runs the tests).

The baseline is one client, in the same run: ratios are of its p99.
Every client connects to one Daphne, says hello and waits for "synced". The test
process then posts 100 chat messages through the service, one every 20 ms, as people
would; each post is broadcast after commit through the channel layer. Delivery latency
is the time from the start of the post to the frame's arrival at a client, for every
(message, client) pair: p50 / p99 / max. Every client must get every seq exactly once.
A tenth of the clients drop their socket after the 50th message and come back with
``hello`` from the last seq they saw; they must end with every seq exactly once too
(replay completeness after reconnect).
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from django.conf import settings
from django.test import Client
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidHandshake

from rooms.services import message_post
from tests.conftest import start_daphne
from tests.rooms.factories import make_room, make_user

pytestmark = [pytest.mark.bench, pytest.mark.django_db(transaction=True)]

MESSAGES = 100
PACE_SECONDS = 0.02
RECONNECT_AFTER = 50


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


class Watcher:
    """One websocket client: the seqs it got (with arrival times), in order."""

    def __init__(self, url: str, cookie: str, origin: str, *, reconnects: bool) -> None:
        self.url, self.cookie, self.origin = url, cookie, origin
        self.reconnects = reconnects
        self.arrivals: list[tuple[int, float]] = []
        self.synced = asyncio.Event()
        self.retries = 0

    async def run(self, last_seq: int, done: asyncio.Event) -> None:
        seq = await self._session(last_seq, done, leave_after=RECONNECT_AFTER if self.reconnects else None)
        if seq is not None:  # dropped on purpose: come back from the last seq seen
            await self._session(seq, done, leave_after=None)

    async def _open(self):
        # A refused handshake is retried, as the page's own client does; the retries are counted.
        for attempt in range(5):
            try:
                return await connect(self.url, additional_headers={"Cookie": self.cookie},
                                     origin=self.origin, open_timeout=60, max_queue=None)
            except (OSError, InvalidHandshake):
                if attempt == 4:
                    raise
                self.retries += 1
                await asyncio.sleep(0.2 * (attempt + 1))

    async def _session(self, last_seq: int, done: asyncio.Event, leave_after: int | None) -> int | None:
        async with await self._open() as socket:
            await socket.send(json.dumps({"type": "hello", "last_seq": last_seq}))
            while not done.is_set():
                try:
                    raw = await asyncio.wait_for(socket.recv(), 0.5)
                except TimeoutError:
                    continue
                frame = json.loads(raw)
                if frame["type"] == "synced":
                    self.synced.set()
                elif frame["type"] == "message":
                    self.arrivals.append((frame["seq"], time.perf_counter()))
                    if leave_after is not None and len(self.arrivals) >= leave_after:
                        return frame["seq"]
                elif frame["type"] in ("error", "truncated"):
                    raise AssertionError(f"unexpected frame {frame}")
        return None


async def fan_out(url: str, cookie: str, origin: str, clients: int, room, author, start_seq: int):
    watchers = [Watcher(url, cookie, origin, reconnects=n % 10 == 9) for n in range(clients)]
    done = asyncio.Event()
    tasks = [asyncio.create_task(w.run(start_seq, done)) for w in watchers]
    synced = asyncio.gather(*(w.synced.wait() for w in watchers))
    finished, _ = await asyncio.wait([synced, *tasks], timeout=120, return_when=asyncio.FIRST_COMPLETED)
    if synced not in finished:  # a client failed or the hub is stuck: say which
        failed = [t.exception() for t in tasks if t.done() and t.exception()]
        raise AssertionError(f"{sum(not w.synced.is_set() for w in watchers)} not synced; {failed[:1]}")

    posted_at: dict[int, float] = {}
    for n in range(MESSAGES):
        started = time.perf_counter()
        message = await asyncio.to_thread(
            message_post, room=room, author=author, kind="chat", text=f"fan-out {clients}: {n}")
        posted_at[message.seq] = started
        await asyncio.sleep(PACE_SECONDS)
    expected = sorted(posted_at)
    deadline = time.perf_counter() + 60
    while time.perf_counter() < deadline:
        if all(sorted({s for s, _ in w.arrivals if s in posted_at}) == expected for w in watchers):
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)  # let any duplicate arrive before counting
    done.set()
    await asyncio.gather(*tasks)
    return watchers, posted_at


@pytest.mark.timeout(1200)
def test_fan_out_to_many_watchers(tmp_path):
    owner = make_user()
    room = make_room(owner)
    client = Client()
    client.force_login(owner)
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    server = start_daphne(tmp_path / "daphne.log")
    rows = []
    try:
        url = f"ws://{server.host}:{server.port}/ws/rooms/{room.slug}/"
        for clients in (1, 50, 100, 200):  # one client: the baseline
            start_seq = room.messages.order_by("-seq").values_list("seq", flat=True).first() or 0
            watchers, posted_at = asyncio.run(
                fan_out(url, cookie, server.url, clients, room, owner, start_seq))
            latencies, lost, duplicated = [], 0, 0
            for watcher in watchers:
                seqs = [s for s, _ in watcher.arrivals if s in posted_at]
                lost += len(set(posted_at) - set(seqs))
                duplicated += len(seqs) - len(set(seqs))
                # Latency is live delivery only: frames a reconnecting client got from its
                # replay arrive whenever it came back, not when they were posted.
                first_arrival = {}
                for seq, arrived in watcher.arrivals:
                    first_arrival.setdefault(seq, arrived)
                if not watcher.reconnects:
                    latencies += [first_arrival[s] - posted_at[s] for s in posted_at if s in first_arrival]
            rows.append((clients, latencies, lost, duplicated, sum(w.reconnects for w in watchers),
                         sum(w.retries for w in watchers)))
    finally:
        server.hub_process.stop()
    crashes = server.hub_process.log_path.read_text(errors="replace").count("Exception inside application")
    print(f"\nfan-out of {MESSAGES} chat posts (one every {PACE_SECONDS * 1000:.0f} ms) to one room; "
          "latency from the post's start to the frame at each client")
    base_p99 = percentile(rows[0][1], 99)
    for clients, latencies, lost, duplicated, reconnected, retries in rows:
        print(f"  {clients:>3} clients: p50 {percentile(latencies, 50) * 1000:7.1f} ms, "
              f"p99 {percentile(latencies, 99) * 1000:7.1f} ms (×{percentile(latencies, 99) / base_p99:.1f} "
              f"one client's), max {max(latencies) * 1000:7.1f} ms; "
              f"{lost} lost, {duplicated} duplicated; {reconnected} reconnected mid-stream; "
              f"{retries} handshakes retried")
    print(f"  consumer crashes in Daphne's log: {crashes}")
    assert crashes == 0
    assert all(lost == 0 and duplicated == 0 for _, _, lost, duplicated, _, _ in rows)
