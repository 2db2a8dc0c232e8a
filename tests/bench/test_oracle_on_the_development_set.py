"""The oracle's search against the replay of what it found, on the whole development set.

Run: .venv/bin/pytest -m bench tests/bench/test_oracle_on_the_development_set.py -s
(about 5 minutes a window on one core; ATRIUM_REPLAY_DATA overrides the data folder).
For each window: runs whose search figure differs from the replay of its schedule
(should be 0: the decomposition is exact), runs where on_demand's run stands in, and
on_demand and the oracle as cost × none (strict accounting, Anthropic prices).
"""

from __future__ import annotations

import pytest

from observations.replay import load_trajectories
from observations.replay.eval.engine import ReplaySettings, replay
from observations.replay.eval.oracle import oracle
from observations.replay.eval.runner import length_prior
from tests.bench.test_replay_throughput import DATA, WINDOWS


def strict(run) -> float:
    return run.input_cost_full_write + run.output_cost


@pytest.mark.bench
@pytest.mark.parametrize("window", WINDOWS)
def test_the_search_figure_is_the_replayed_cost(window):
    if not DATA.is_dir():
        pytest.skip(f"no development set at {DATA} (set ATRIUM_REPLAY_DATA)")
    runs = load_trajectories([DATA]).trajectories
    settings = ReplaySettings()
    mismatched, stand_ins, totals = [], 0, {"none": 0.0, "on_demand": 0.0, "oracle": 0.0}
    for trajectory in runs:
        prior = length_prior(trajectory, runs)
        found = oracle(trajectory, window, settings, prior)
        totals["oracle"] += strict(found.run)
        for policy in ("none", "on_demand"):
            totals[policy] += strict(replay(trajectory, policy, window, settings, prior=prior))
        if found.predicted is None:
            stand_ins += 1
        elif abs(found.predicted - strict(found.run)) > 1e-9 * strict(found.run):
            mismatched.append(trajectory.trajectory_id)
    print(f"\n{window // 1000}k: {len(runs)} runs, search ≠ replay in {len(mismatched)} {mismatched}, "
          f"on_demand stands in for {stand_ins}; on_demand {totals['on_demand'] / totals['none']:.3f} × none, "
          f"oracle {totals['oracle'] / totals['none']:.3f} × none")
    assert not mismatched
    assert totals["oracle"] <= totals["on_demand"]
