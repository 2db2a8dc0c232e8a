"""The limit: the cheapest schedule of folds in hindsight, for one trajectory and window.

The oracle knows the whole recorded run. Its family of schedules: fold at any set of
recorded steps; each fold evicts every consumed result and payload except the results
whose range the agent will read again later (it knows when), so that no re-read is
ever served twice, and those a note not sent yet points at (as on_demand keeps them);
every request stays under the ceiling with no mandatory fold and no
new segment. Cost is the strict accounting (every fold request written to the cache
whole), with the prices the replay is billed with.

Search: dynamic programming over fold steps. A fold evicts everything it may at that
moment, so what the context holds after a fold at step j does not depend on earlier
folds (the evicted sets only grow), and neither does the strict cost of any request
from j on. Hence the cost of a schedule is a sum of independent pieces: the steps
before its first fold, billed without folds, and for each fold at j the steps from j
to the next fold, billed as in a run that folds at j and not after (and at every step
before j, which reaches j unblocked wherever anything can). One replay per candidate j
gives every such piece (``cost[j][k]``, prefix sums), and best[j] = min over i < j of
best[i] + piece(i, j) finds the optimum in O(n²) after O(n) replays. A piece with a
blocked step (a request over the ceiling, a mandatory fold, a new segment: past one the
context depends on more than the last fold), or ending where the next fold would be
mandatory, is forbidden, which is what keeps the sum exact. The schedule found is then
replayed as a whole; the search's own figure is kept beside it (``predicted``) and
equals it (tests/replay/test_oracle.py checks both, and a brute force over every
schedule).

The limit is never above what the gateway achieves: where no schedule of the family
fits (the run needs a new segment or a mandatory fold), or on_demand's own run, which
may leave the family that way, is cheaper, on_demand's run stands in (``predicted`` is
then None).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate

from observations.gateway.economics import LengthPrior
from observations.gateway.policies import FoldReason, Plan
from observations.gateway.transcript import Observation
from observations.gateway.view import PolicyView
from observations.replay.eval.engine import ReplaySettings, RunResult, observation_input, replay
from observations.replay.trajectory import Trajectory

ORACLE = "oracle"


class ForcedFolds:
    """Fold at the given recorded steps, evicting all but what will be read again."""

    name = ORACLE
    manages_window = True

    def __init__(self, schedule: frozenset[int], last_read: dict[tuple, int]) -> None:
        self.schedule = schedule
        self.last_read = last_read  # range key -> index of the last event reading it
        self.at = -1  # the recorded step whose boundary comes next

    def set_step(self, index: int) -> None:
        self.at = index

    def plan(self, ctx: PolicyView, *, person_waiting: bool, overflow: bool) -> Plan:
        # Over the ceiling the fold is mandatory, as for on_demand, and takes everything.
        mandatory = overflow or ctx.projection() > ctx.budget.ceiling
        if self.at not in self.schedule and not mandatory:
            return Plan(note="not a fold step of the schedule")
        seen = ctx.received  # events received so far
        # A result a fresh note points at stays too: evicted, the note would become its
        # text (folds._serve_fresh_notes), and what a fold leaves would then
        # depend on the folds before it.
        noted = ctx.noted_targets()
        chosen = [item for item in ctx.eviction_candidates()
                  if mandatory or not (self._read_again(item, seen)
                                       or isinstance(item, Observation) and item.obs_id in noted)]
        if not chosen:
            return Plan(note="nothing to fold")
        return Plan(evict=tuple(chosen), reason=FoldReason.COST)

    def _read_again(self, item, seen: int) -> bool:
        return (isinstance(item, Observation) and item.source.read is not None
                and self.last_read.get(item.source.read.key, -1) >= seen)


@dataclass(frozen=True, slots=True)
class OracleRun:
    run: RunResult
    schedule: tuple[int, ...]
    # The search's cost (strict input + output); equal to the replay's by construction.
    # None: no schedule of the family fits, and on_demand's run stands in.
    predicted: float | None


def last_reads(trajectory: Trajectory) -> dict[tuple, int]:
    """For each read range (as the ledger keys it), the index of the last event reading it."""
    last: dict[tuple, int] = {}
    index = 0
    for step in trajectory.steps:
        if not step.kept_in_history:
            continue
        for event in step.events:
            source = observation_input(event)
            if source.read is not None:
                last[source.read.key] = index
            index += 1
    return last


def oracle(trajectory: Trajectory, window: int, settings: ReplaySettings,
           prior: LengthPrior | None = None) -> OracleRun:
    last = last_reads(trajectory)
    n = len(trajectory.steps)

    def run_with(schedule: frozenset[int]) -> RunResult:
        policy = ForcedFolds(schedule, last)
        return replay(trajectory, policy, window, settings, prior=prior, on_step=policy.set_step)

    def prefix_sums(run: RunResult) -> tuple[list[float], list[int], list[float]]:
        """Cumulative strict cost and count of blocked steps (over the ceiling, a
        mandatory fold, a new segment, the stop), and each step's cost as a fold
        request; a stopped run's missing steps count as blocked."""
        missing = n - len(run.step_costs)
        costs = run.step_costs + [float("inf")] * missing
        blocked = [int(b) for b in run.step_blocked] + [1] * missing
        return (list(accumulate(costs, initial=0.0)), list(accumulate(blocked, initial=0)),
                run.step_fold_costs + [float("inf")] * missing)

    # The steps from a fold at j on are billed from a run that folds at every step up to
    # j: it reaches j with nothing blocked wherever any schedule can, and after the fold
    # at j its context is the one every schedule has there.
    runs = {0: prefix_sums(run_with(frozenset()))}
    runs.update({j: prefix_sums(run_with(frozenset(range(1, j + 1)))) for j in range(1, n)})

    def piece(j: int, k: int) -> float:
        """Steps j..k-1 after a fold at j (before any fold: j == 0). Forbidden when a
        step up to k-1 of that run is blocked (past it the context no longer depends on
        the fold at j alone), or step k, where the next fold comes, would be (that fold
        would be mandatory and take more than the schedule's): the pieces would not add
        up to the schedule's cost."""
        sums, blocked, as_fold = runs[j]
        if blocked[min(k + 1, n)]:
            return float("inf")
        if j == 0:
            return sums[k]
        # The fold request at j is written whole in the schedule (the run that folded at
        # every step may have had nothing left to fold there); the steps after it are
        # the same in both.
        return as_fold[j] + sums[k] - sums[j + 1]

    cheapest, schedule = _cheapest_schedule(n, piece)
    # The gateway's own run may leave the family (a mandatory fold keeps the newest
    # results, a new segment resets what is held) and be cheaper: the limit is never
    # above what the gateway achieves, so where it is, on_demand's run stands in.
    stand_in = replay(trajectory, "on_demand", window, settings, prior=prior)
    if cheapest < float("inf"):
        chosen = frozenset(schedule)
        final = run_with(chosen)
        if _strict(final) <= _strict(stand_in):
            final.policy = ORACLE
            return OracleRun(final, tuple(sorted(chosen)), cheapest)
    stand_in.policy = ORACLE
    return OracleRun(stand_in, (), None)


def _cheapest_schedule(n: int, piece: Callable[[int, int], float]) -> tuple[float, list[int]]:
    """The cheapest cost of n steps cut into pieces at fold steps, and those fold steps."""
    best = [float("inf")] * (n + 1)
    came_from = [-1] * (n + 1)
    best[0] = 0.0
    for k in range(1, n + 1):
        for j in range(k):
            if best[j] == float("inf"):
                continue
            total = best[j] + piece(j, k)
            if total < best[k]:
                best[k], came_from[k] = total, j
    # best[k] is the cheapest way to reach the end of step k-1 where k is a fold step
    # (or the end); reconstruct the folds.
    schedule: list[int] = []
    k = n
    while k > 0 and came_from[k] > 0:
        schedule.append(came_from[k])
        k = came_from[k]
    return best[n], schedule


def _strict(run: RunResult) -> float:
    return run.input_cost_full_write + run.output_cost
