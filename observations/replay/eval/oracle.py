"""The limit: the cheapest schedule of folds in hindsight, for one trajectory and window.

The oracle knows the whole recorded run. Its family of schedules obeys on_demand's
rules: fold at any set of recorded steps; each fold evicts every consumed result and
payload except the results whose range the agent will read again later (it knows
when), so that no re-read is ever served twice, those a note not sent yet points at,
and what on_demand keeps in use: what the agent's last two turns wrote and asked for
(``PolicyView.is_hot``) and the working set (the current text of the files it changed
and still works on, ``PolicyView.working_set``); a fold frees at least the least fold
(``Budget.optional_fold_min``), and every request stays under the ceiling with no
mandatory fold and no new segment. ``oracle-no-guard`` is the family as it was before
the working-set guard (nothing kept in use, no least fold), beside
``on_demand-no-guard``. Cost is the strict accounting (every fold request written to
the cache whole), with the prices the replay is billed with.

Search: dynamic programming over fold steps. One replay per candidate step j that
folds at every step up to j reaches j holding the least any schedule with a fold at j
can hold there (the evicted sets of a run only grow), so billing the steps from j to
the next fold from it bills each of a schedule's pieces at most what it costs
(``cost[j][k]``, prefix sums); a fold at k after one at j can free at most what is
evictable at k and was not at j, which decides whether it passes the least fold.
best[k] = min over j < k of best[j] + piece(j, k) then finds the cheapest sum in O(n²)
after O(n) replays: never above the family's cheapest schedule. Without the working
set what a fold leaves does not depend on the folds before it, the bound is exact, and
the search's figure (``predicted``) equals the replay of the schedule it found
(tests/replay/test_oracle.py checks both, and a brute force over every schedule).
With it, a file's read that an earlier fold would have taken (before an edit put the
file in the working set) is still held by a schedule that did not fold then, so a
schedule can pay more than its pieces, and one of its folds can free less than the
least fold and not happen: the row is the replay of the schedule found (a run that
obeys the rules), and ``predicted`` the bound below every such run. A piece with a
blocked step (a request over the ceiling, a mandatory fold, a new segment: past one the
context depends on more than the last fold), or ending where the next fold would be
mandatory, is forbidden.

The limit is never above what the gateway achieves: where no schedule of the family
fits (the run needs a new segment or a mandatory fold; ``predicted`` is then None), or
on_demand's own run under the same budget, which may leave the family that way, is
cheaper than the schedule found, on_demand's run stands in (and ``predicted`` stays:
with the working set the family can hold a schedule between the two).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import accumulate

from observations.gateway.economics import LengthPrior
from observations.gateway.policies import FoldReason, Plan
from observations.gateway.transcript import Observation
from observations.gateway.view import PolicyView
from observations.replay.eval.engine import (
    ORACLE_NO_GUARD,
    ReplaySettings,
    RunResult,
    observation_input,
    replay,
)
from observations.replay.trajectory import Trajectory

ORACLE = "oracle"
NO_GUARD_BUDGET = (("working_set_steps", 0), ("optional_min_freed", 0.0))

ItemKey = tuple[str, int]  # ("o", obs_id) or ("p", payload pid)


class ForcedFolds:
    """Fold at the given recorded steps, evicting all but what will be read again, what is
    in use (``in_use``: the last two turns' and the working set, as on_demand keeps
    them); a fold that would free less than the least fold does not happen, unless
    ``least_fold`` is off (the search's runs, which bound what schedules cost)."""

    name = ORACLE
    manages_window = True

    def __init__(self, schedule: frozenset[int], last_read: dict[tuple, int], *, in_use: bool = True,
                 least_fold: bool = True) -> None:
        self.schedule = schedule
        self.last_read = last_read  # range key -> index of the last event reading it
        self.in_use, self.least_fold = in_use, least_fold
        self.last = max(schedule, default=-1)
        self.at = -1  # the recorded step whose boundary comes next
        # At the schedule's last fold: the gain of each item a fold there may take,
        # evicted already or not, and the calibration ratio (the search's least fold).
        self.evictable_last: tuple[dict[ItemKey, int], float] | None = None

    def set_step(self, index: int) -> None:
        self.at = index

    def plan(self, ctx: PolicyView, *, person_waiting: bool, overflow: bool) -> Plan:
        # Over the ceiling the fold is mandatory, as for on_demand, and takes everything.
        mandatory = overflow or ctx.projection() > ctx.budget.ceiling
        if self.at not in self.schedule and not mandatory:
            return Plan(note="not a fold step of the schedule")
        if mandatory:
            chosen = list(ctx.eviction_candidates())
            return Plan(evict=tuple(chosen), reason=FoldReason.COST) if chosen else Plan(note="nothing to fold")
        kept = self._kept(ctx)
        if self.at == self.last:
            self.evictable_last = ({_key(item): item.gain for item in ctx.consumed_items() if not kept(item)},
                                   ctx.calibration.ratio)
        chosen = [item for item in ctx.eviction_candidates() if not kept(item)]
        if not chosen:
            return Plan(note="nothing to fold")
        freed = round(sum(item.gain for item in chosen) * ctx.calibration.ratio)
        if self.least_fold and freed < ctx.budget.optional_fold_min:
            return Plan(note=f"a fold would free {freed:,} tokens, less than the least fold")
        return Plan(evict=tuple(chosen), reason=FoldReason.COST)

    def _kept(self, ctx: PolicyView) -> Callable[[object], bool]:
        seen = ctx.received  # events received so far
        # A result a fresh note points at stays too: evicted, the note would become its
        # text (folds._serve_fresh_notes), and what a fold leaves would then
        # depend on the folds before it.
        noted = ctx.noted_targets()
        working = ctx.working_set() if self.in_use else None

        def kept(item) -> bool:
            return (self._read_again(item, seen) or isinstance(item, Observation) and item.obs_id in noted
                    or self.in_use and ctx.is_hot(item) or working is not None and working.holds(item))
        return kept

    def _read_again(self, item, seen: int) -> bool:
        return (isinstance(item, Observation) and item.source.read is not None
                and self.last_read.get(item.source.read.key, -1) >= seen)


def _key(item) -> ItemKey:
    return ("o", item.obs_id) if isinstance(item, Observation) else ("p", item.pid)


@dataclass(frozen=True, slots=True)
class OracleRun:
    run: RunResult
    schedule: tuple[int, ...]
    # The search's cost (strict input + output), or the row's where that is less: a bound
    # never above any schedule of the family nor the row, and without the working set
    # the replay of the schedule found. None: no schedule of the family fits, and
    # on_demand's run stands in.
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
           prior: LengthPrior | None = None, *, in_use: bool = True) -> OracleRun:
    """``in_use``: the family keeps what on_demand keeps in use (else: the family as it
    was before the working-set guard)."""
    last = last_reads(trajectory)
    n = len(trajectory.steps)
    least = settings.budget_for(window).optional_fold_min

    def run_with(schedule: frozenset[int], *, least_fold: bool = True) -> tuple[RunResult, ForcedFolds]:
        policy = ForcedFolds(schedule, last, in_use=in_use, least_fold=least_fold)
        return replay(trajectory, policy, window, settings, prior=prior, on_step=policy.set_step), policy

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
    # at j its context is the least any schedule holds there.
    runs = {0: prefix_sums(run_with(frozenset())[0])}
    evictable: dict[int, tuple[dict[ItemKey, int], float] | None] = {0: ({}, 1.0)}
    for j in range(1, n):
        run, policy = run_with(frozenset(range(1, j + 1)), least_fold=False)
        runs[j], evictable[j] = prefix_sums(run), policy.evictable_last

    # A schedule's own calibration can differ from these runs': the largest they saw.
    ratio = max((seen[1] for seen in evictable.values() if seen is not None), default=1.0)

    def may_fold(j: int, k: int) -> bool:
        """Whether a fold at k after one at j (none: j == 0) can free the least fold: at
        most what is evictable at k and was not at j."""
        at_j, at_k = evictable[j], evictable[k]
        if at_j is None or at_k is None:
            return False
        gains = at_k[0]
        return round(sum(gains[key] for key in gains.keys() - at_j[0].keys()) * ratio) >= least

    def piece(j: int, k: int) -> float:
        """Steps j..k-1 after a fold at j (before any fold: j == 0). Forbidden when a
        step up to k-1 of that run is blocked (past it the context no longer depends on
        the fold at j alone), or step k, where the next fold comes, would be (that fold
        would be mandatory and take more than the schedule's), or the fold at k cannot
        free the least fold."""
        sums, blocked, as_fold = runs[j]
        if blocked[min(k + 1, n)] or k < n and least and not may_fold(j, k):
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
    if cheapest == float("inf"):
        stand_in.policy = ORACLE
        return OracleRun(stand_in, (), None)
    chosen = frozenset(schedule)
    final, _ = run_with(chosen)
    if _strict(final) > _strict(stand_in):
        # With the working set the schedule found can replay dearer than its bound, and
        # than on_demand's run, which may leave the family and cost less than the bound.
        final, chosen = stand_in, frozenset()
    final.policy = ORACLE
    return OracleRun(final, tuple(sorted(chosen)), min(cheapest, _strict(final)))


def oracle_no_guard(trajectory: Trajectory, window: int, settings: ReplaySettings,
                    prior: LengthPrior | None = None) -> OracleRun:
    """The limit of the family as it was before the working-set guard (nothing kept in
    use, no least fold), for the figures before it; on_demand-no-guard (on_demand's run
    under the same budget) stands in."""
    no_guard = replace(settings, budget=(*settings.budget, *NO_GUARD_BUDGET))
    found = oracle(trajectory, window, no_guard, prior, in_use=False)
    found.run.policy = ORACLE_NO_GUARD
    return found


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


# The limits the replay reports, by the name of their row.
LIMITS: dict[str, Callable[..., OracleRun]] = {ORACLE: oracle, ORACLE_NO_GUARD: oracle_no_guard}
