"""The oracle: the cheapest fold schedule in hindsight, found by dynamic programming."""

from __future__ import annotations

from itertools import combinations

import pytest

from observations.gateway.economics import LengthPrior
from observations.replay.eval.cost import PRICES
from observations.replay.eval.engine import ReplaySettings, replay
from observations.replay.eval.oracle import ForcedFolds, last_reads, oracle
from tests.replay.test_evaluate_factories import file_text, read_event, shell_event, trajectory

SETTINGS = ReplaySettings(cost=PRICES["anthropic"])


def run_of(steps: int, *, reread_at: int | None = None):
    events = []
    for n in range(steps):
        if n == reread_at:
            events.append(read_event(f"c{n}", "f0.py", file_text("f0.py", 300)))
        elif n % 3 == 2:
            events.append(shell_event(f"c{n}", "make", f"build line {n}\n" * 250))
        else:
            events.append(read_event(f"c{n}", f"f{n}.py", file_text(f"f{n}.py", 300)))
    return trajectory(events)


def strict(run) -> float:
    return run.input_cost_full_write + run.output_cost


def brute_force(traj, window: int) -> float:
    """Every schedule of folds, replayed: the true minimum of the family."""
    last = last_reads(traj)
    n = len(traj.steps)
    best = float("inf")
    for size in range(n):
        for schedule in combinations(range(1, n), size):
            policy = ForcedFolds(frozenset(schedule), last)
            run = replay(traj, policy, window, SETTINGS, on_step=policy.set_step)
            if not run.failed and run.over_ceiling == 0:
                best = min(best, strict(run))
    return best


@pytest.mark.parametrize("window", [16_000, 128_000])
def test_the_search_finds_the_cheapest_schedule_of_its_family(window):
    traj = run_of(9)
    found = oracle(traj, window, SETTINGS)
    assert strict(found.run) == pytest.approx(brute_force(traj, window))
    # The decomposition the search relies on holds: its own figure is the replay's.
    assert found.predicted == pytest.approx(strict(found.run))
    assert found.run.policy == "oracle" and not found.run.failed


@pytest.mark.parametrize("window", [16_000, 128_000])
def test_the_search_stays_exact_with_an_unchanged_re_read_served_as_a_note(window):
    """A note for an unchanged re-read points at the first read: a fold that evicted that
    read before the note was sent would serve the note as text, and what a fold leaves
    would depend on the folds before it. The family keeps it, as on_demand does."""
    traj = run_of(9, reread_at=5)
    found = oracle(traj, window, SETTINGS)
    assert found.predicted == pytest.approx(strict(found.run))
    assert strict(found.run) == pytest.approx(brute_force(traj, window))


def test_it_folds_when_folding_pays_and_never_costs_more_than_not_folding():
    traj = run_of(12)
    found = oracle(traj, 128_000, SETTINGS)
    unfolded = replay(traj, "none", 128_000, SETTINGS)
    assert found.schedule and strict(found.run) < strict(unfolded)
    on_demand = replay(traj, "on_demand", 128_000, SETTINGS, prior=LengthPrior.of([12] * 20))
    assert strict(found.run) <= strict(on_demand) + 1e-6


def test_a_result_read_again_later_is_kept_until_then():
    traj = run_of(10, reread_at=8)
    found = oracle(traj, 128_000, SETTINGS)
    assert found.run.rereads_after_eviction == 0
    assert found.run.denied_rereads == 0


def test_where_only_a_mandatory_fold_fits_it_still_never_stops_a_run():
    traj = run_of(14)
    found = oracle(traj, 12_000, SETTINGS)
    assert not found.run.failed and found.run.over_ceiling == 0


def test_a_run_only_a_new_segment_can_carry_has_on_demands_run_as_its_limit():
    # One result larger than a 16k window's ceiling: no schedule of folds fits it.
    events = [read_event("c0", "a.py", file_text("a.py", 40)),
              shell_event("c1", "make", "error: boom\n" * 5_000), shell_event("c2", "ls", "a.py\n")]
    traj = trajectory(events)
    found = oracle(traj, 16_000, SETTINGS)
    on_demand = replay(traj, "on_demand", 16_000, SETTINGS)
    assert found.predicted is None and found.schedule == ()
    assert found.run.policy == "oracle" and not found.run.failed and len(found.run.segments) == 1
    assert strict(found.run) == pytest.approx(strict(on_demand))
