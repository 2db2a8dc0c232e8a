"""Benchmark: what issue 13 adds to every step boundary (the loop alarm's look at the
session, the request breakdown stored with each call) against the boundary itself
(`SessionContext.prepare`), by session length.

Run: .venv/bin/pytest -m bench tests/bench/test_boundary_watchers.py -s
Prints medians per size and their ratio to prepare() measured in the same run.
"""

from __future__ import annotations

import statistics
import time

import pytest

from observations.gateway.breakdown import request_breakdown
from sessions.analysis.loops import LoopRules, watch
from tests.bench.test_gateway_boundary import session_with

SIZES = (100, 1_000, 5_000)
SAMPLES = 50


def _median(action) -> float:
    times = []
    for _ in range(SAMPLES):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@pytest.mark.bench
def test_the_loop_alarm_and_the_breakdown_cost_little_next_to_the_boundary():
    rules = LoopRules()
    print("\nobservations | prepare median | watch median | breakdown median | watch/prepare | breakdown/prepare")
    for size in SIZES:
        ctx = session_with(size)
        prepare = _median(ctx.prepare)
        watched = _median(lambda ctx=ctx: watch(ctx, [], rules))
        parts = _median(lambda ctx=ctx: request_breakdown(ctx))
        print(f"{size:>12,} | {prepare * 1e3:>11.3f} ms | {watched * 1e3:>9.3f} ms | {parts * 1e3:>13.3f} ms | "
              f"{watched / prepare:>13.1f} | {parts / prepare:>17.1f}")
