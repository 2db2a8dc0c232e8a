"""Benchmark: what a broadcast costs the code that sends it (a web request's commit, a
worker's step): the caller's time per send, queued (rooms/broadcast.py) against waiting
for Redis's answer on the same loop and connection (how every send went before), in one
run, to a real Redis.

Run: .venv/bin/pytest -m bench tests/bench/test_broadcast_send.py -s -n0 (REDIS_URL set
for the Redis the tests use). Prints the median and p99 of the caller's time per send,
in µs, and the ratio queued / waited.

On the 2-core development box, 2,000 sends of a 1 KB event each, three runs:

| | p50 µs | p99 µs |
|--|--:|--:|
| waited | 617–786 | 924–1,825 |
| queued | 5–8 (0.01×) | 768–1,129 (0.62–0.85×) |

A queued send's p99 is the sending thread's turn on the GIL while the loop's thread
writes to Redis. A gateway request or a worker's step sends three to five events.
"""

from __future__ import annotations

import asyncio
import statistics
import time

import pytest
from channels.layers import get_channel_layer

from rooms import broadcast

SENDS = 2_000
EVENT = {"type": "test.event", "text": "x" * 1_000}


def _per_send(send) -> list[float]:
    times = []
    for _ in range(SENDS):
        started = time.perf_counter()
        send()
        times.append((time.perf_counter() - started) * 1e6)
    return times


@pytest.mark.bench
def test_a_queued_broadcast_against_one_waited_for():
    layer, loop = get_channel_layer(), broadcast._shared_loop()
    waited = _per_send(lambda: asyncio.run_coroutine_threadsafe(layer.group_send("bench", EVENT), loop).result())
    queued = _per_send(lambda: broadcast.group_send("bench", EVENT))
    assert broadcast.flush(timeout=60)
    print("\n       | p50 µs | p99 µs")
    for name, times in (("waited", waited), ("queued", queued)):
        print(f"{name:6} | {statistics.median(times):6.0f} | {statistics.quantiles(times, n=100)[98]:6.0f}")
    print(f"queued / waited: p50 {statistics.median(queued) / statistics.median(waited):.2f}, "
          f"p99 {statistics.quantiles(queued, n=100)[98] / statistics.quantiles(waited, n=100)[98]:.2f}")
