"""The oracle's search against the replay of what it found, on the whole development set.

Run: .venv/bin/pytest -m bench tests/bench/test_oracle_on_the_development_set.py -s
(3–5 minutes a window on one core; ATRIUM_REPLAY_DATA overrides the data folder).
For each window and each limit (``oracle``, with the working-set guard, and
``oracle-no-guard``): runs whose search figure differs from the replay of its schedule
(none without the guard: the decomposition is exact; with it the figure is a bound, never
above the replay), runs no schedule of the family fits (on_demand's run stands in), and
cost × none (strict accounting, Anthropic prices) of the policy, the limit's row and its
bound.
"""

from __future__ import annotations

import pytest

from observations.replay import load_trajectories
from observations.replay.eval.engine import NO_GUARD, ORACLE_NO_GUARD, ReplaySettings, replay
from observations.replay.eval.oracle import ORACLE, oracle, oracle_no_guard
from observations.replay.eval.runner import length_prior
from tests.bench.test_replay_throughput import DATA, WINDOWS

# Each limit beside the policy whose family it is the limit of.
LIMITS = ((ORACLE, oracle, "on_demand"), (ORACLE_NO_GUARD, oracle_no_guard, NO_GUARD))


def strict(run) -> float:
    return run.input_cost_full_write + run.output_cost


@pytest.mark.bench
@pytest.mark.timeout(1_800)
@pytest.mark.parametrize("window", WINDOWS)
def test_the_search_figure_bounds_the_replayed_cost(window):
    if not DATA.is_dir():
        pytest.skip(f"no development set at {DATA} (set ATRIUM_REPLAY_DATA)")
    runs = load_trajectories([DATA]).trajectories
    settings = ReplaySettings()
    none = 0.0
    totals = {name: {"policy": 0.0, "limit": 0.0, "bound": 0.0} for name, _, _ in LIMITS}
    mismatched: dict[str, list[str]] = {name: [] for name, _, _ in LIMITS}
    above: dict[str, list[str]] = {name: [] for name, _, _ in LIMITS}
    unfit = dict.fromkeys(totals, 0)
    for trajectory in runs:
        prior = length_prior(trajectory, runs)
        none += strict(replay(trajectory, "none", window, settings, prior=prior))
        for name, search, policy in LIMITS:
            found = search(trajectory, window, settings, prior)
            replayed = strict(found.run)
            totals[name]["policy"] += strict(replay(trajectory, policy, window, settings, prior=prior))
            totals[name]["limit"] += replayed
            bound = replayed if found.predicted is None else found.predicted
            totals[name]["bound"] += bound
            unfit[name] += found.predicted is None
            if abs(bound - replayed) > 1e-9 * replayed:
                mismatched[name].append(trajectory.trajectory_id)
            if bound > replayed * (1 + 1e-9):
                above[name].append(trajectory.trajectory_id)
    for name, _, policy in LIMITS:
        ratio = {key: value / none for key, value in totals[name].items()}
        print(f"\n{window // 1000}k {name}: {len(runs)} runs, search ≠ replay in {len(mismatched[name])}, "
              f"no schedule of the family fits {unfit[name]}; {policy} {ratio['policy']:.3f} × none, "
              f"{name} {ratio['limit']:.3f} (bound {ratio['bound']:.3f}): gap {ratio['policy'] - ratio['limit']:.3f} "
              f"(to the bound {ratio['policy'] - ratio['bound']:.3f})")
        assert not above[name], f"the search's figure is above the replay: {above[name]}"
    assert not mismatched[ORACLE_NO_GUARD], "without the guard the decomposition is exact"
