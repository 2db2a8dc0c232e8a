"""Benchmark: replay throughput over the whole development set, single core.

Run: .venv/bin/pytest -m bench tests/bench/test_replay_throughput.py -s
The data folder is ../shared/data/trajectories (ATRIUM_REPLAY_DATA overrides it).
Prints steps (model requests) replayed per second per policy at a 32k window, where
on_demand folds, as ratios to the `none` policy measured in the same run, and the full
evaluation (every policy × 32k, 64k, 128k) the command runs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from observations.replay import load_trajectories
from observations.replay.eval.engine import POLICIES, ReplaySettings, replay
from observations.replay.eval.oracle import ORACLE, oracle
from observations.replay.eval.runner import replay_all

DATA = Path(
    os.environ.get(
        "ATRIUM_REPLAY_DATA", Path(__file__).resolve().parents[3] / "shared/data/trajectories"
    )
)
WINDOWS = (32_000, 64_000, 128_000)


@pytest.mark.bench
def test_replay_throughput_over_the_development_set():
    if not DATA.is_dir():
        pytest.skip(f"no development set at {DATA} (set ATRIUM_REPLAY_DATA)")
    started = time.perf_counter()
    loaded = load_trajectories([DATA])
    load_seconds = time.perf_counter() - started
    trajectories = loaded.trajectories
    steps = sum(len(t.steps) for t in trajectories)
    print(f"\nloaded {len(trajectories)} trajectories, {steps:,} steps in {load_seconds:.2f}s")

    settings = ReplaySettings()
    rates = {}
    for policy in POLICIES:
        started = time.perf_counter()
        if policy == ORACLE:  # a search over many replays: its rate is per step of the run it finds
            replayed = sum(oracle(t, WINDOWS[0], settings).run.requests for t in trajectories)
        else:
            replayed = sum(replay(t, policy, WINDOWS[0], settings).requests for t in trajectories)
        rates[policy] = replayed / (time.perf_counter() - started)
    print("policy (32k)      | steps/s | × none")
    for policy, rate in rates.items():
        print(f"{policy:<17} | {rate:>7,.0f} | ×{rate / rates['none']:.2f}")

    started = time.perf_counter()
    results = [replay_all(t, POLICIES, WINDOWS, settings) for t in trajectories]
    seconds = time.perf_counter() - started
    replayed = sum(r.requests for t in results for r in t.totals.values())
    print(
        f"full evaluation: {len(POLICIES)} policies × {len(WINDOWS)} windows, {replayed:,} steps in "
        f"{seconds:.1f}s = {replayed / seconds:,.0f} steps/s (×{replayed / seconds / rates['none']:.2f} none)"
    )
    # The gateway's bookkeeping must not make a policy pathologically slower than
    # replaying the bare history.
    assert min(rate for policy, rate in rates.items() if policy != ORACLE) > 0.2 * rates["none"]
