"""Eviction policies: at a step boundary, which observations leave the context.

Policies only choose, from a read-only view of the session (view.PolicyView);
SessionContext applies the choice as one fold (an epoch change), so the request stays
append-only between folds. ``POLICIES`` is the one table of them: the live hub, the
replay and the agent profile's choices all read it, so a policy is one class and one
row (docs/contributing.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from observations.gateway.serving import Serving
from observations.gateway.transcript import Observation, ObsState

if TYPE_CHECKING:
    from observations.gateway.folds import Evictable
    from observations.gateway.view import PolicyView

# A receipt costs tokens too: evicting a result barely larger than its receipt gains
# nothing and still breaks the cached prefix.
MIN_GAIN_TOKENS = 64

class FoldReason(StrEnum):
    TRIGGER = "trigger"
    COST = "cost"  # below the trigger, because it pays
    CEILING = "ceiling"
    OVERFLOW = "overflow"
    EAGER = "eager"
    MASK = "mask"


@dataclass(frozen=True, slots=True)
class Plan:
    evict: tuple[Evictable, ...] = ()
    reason: FoldReason | None = None
    postpone: bool = False
    # Why nothing happened, for the session log ("under trigger", "too small", ...).
    note: str = ""


class Policy(Protocol):
    name: str
    # Keeps the request under the ceiling (and so may fail, or start a new segment);
    # the comparison baselines send whatever the recorded agent sent.
    manages_window: bool

    def plan(self, ctx: PolicyView, *, person_waiting: bool, overflow: bool) -> Plan: ...


class NoEviction:
    name = "none"
    manages_window = False

    def plan(self, ctx: PolicyView, *, person_waiting: bool, overflow: bool) -> Plan:
        return Plan(note="policy none never evicts")


# A fold is timely once the read cost carried since the last fold on what it would free
# reaches what the fold costs: the economic-order rule (docs/replay.md compares shares).
TIMELY_SHARE = 1.0


class OnDemand:
    """Fold when it pays, in one large chunk; at the ceiling, fold because it must.

    A fold is worth it when two things hold (economics.py has the prices):
    - it pays back before the session ends: every later request reads the ``S`` tokens
      it frees no more (``cache_read·S`` each), against rewriting what it keeps once
      (``rewrite_premium·K``, K = the whole folded request: the strict assumption that
      its unchanged start is not read from the cache); the requests still to come are
      estimated from how long sessions of the same agent and model ran
      (``ctx.remaining_requests()``);
    - and it is time: the read cost paid since the last fold on what the fold would
      free has reached what the fold costs (``TIMELY_SHARE``). That is the
      economic-order rule; folding sooner makes many small folds, each rewriting the
      kept part, folding later carries dead weight in every request.
    Above the trigger (80%) the first condition alone makes a fold due (with the least
    fold of the guard below). A due fold
    evicts every consumed result and payload except those still in use
    (``ctx.is_hot``): what the agent wrote in its last two turns and the results they
    asked for, unless superseded since (a read of a file written later, the output
    of a command run again later). The working-set guard keeps more: the current text
    of the files the agent changed and still works on (``ctx.working_set``), and it
    folds only when that frees at least ``budget.optional_fold_min`` tokens. It may
    wait up to ``max_postponements`` boundaries while a person waits for an answer.

    Above the ceiling (or after a provider overflow) the fold is mandatory: oldest
    first, until the projection is at or below the target and at least ``min_freed``
    tokens are freed, or the candidates run out (then segments.py starts a new
    segment).
    """

    name = "on_demand"
    manages_window = True

    def plan(self, ctx: PolicyView, *, person_waiting: bool, overflow: bool) -> Plan:
        budget = ctx.budget
        projection = ctx.projection()
        if overflow:
            # The provider says it does not fit: our projection was low. Fold as if at
            # least the whole window were used.
            return self._mandatory(ctx, FoldReason.OVERFLOW, max(projection, budget.window + 1))
        if projection > budget.ceiling:
            return self._mandatory(ctx, FoldReason.CEILING, projection)
        chosen, reason, note = self._due(ctx, projection)
        if not chosen:
            return Plan(note=note)
        if person_waiting and ctx.postponements < budget.max_postponements:
            return Plan(postpone=True, note="fold due, postponed: a person is waiting")
        return Plan(evict=tuple(chosen), reason=reason, note=note)

    def _due(self, ctx: PolicyView, projection: int) -> tuple[list[Evictable], FoldReason | None, str]:
        ratio = ctx.calibration.ratio
        # Sums kept as the session goes, and the working set looked up per file: no
        # walk over a long session's candidates unless a fold is really due.
        working = ctx.working_set()
        guarded = working.gain if working is not None else 0
        freed = round((ctx.evictable_gain() - ctx.hot_gain() - guarded) * ratio)
        if freed <= 0:
            return [], None, "nothing to fold" + (" outside the working set" if guarded else "")
        waiting = self._waiting(ctx, projection, freed)
        if waiting:
            return [], None, waiting
        chosen = [item for item in ctx.eviction_candidates()
                  if not ctx.is_hot(item) and not (working is not None and working.holds(item))]
        if not chosen:
            return [], None, "nothing to fold"
        above = projection > ctx.budget.trigger
        ahead = ctx.remaining_requests()
        return chosen, FoldReason.TRIGGER if above else FoldReason.COST, f"frees {freed:,} for ~{ahead:.0f} requests"

    @staticmethod
    def _waiting(ctx: PolicyView, projection: int, freed: int) -> str:
        """Why a fold freeing ``freed`` tokens is not due yet ("" when it is)."""
        least = ctx.budget.optional_fold_min
        ahead = ctx.remaining_requests()
        if freed < least:
            return f"a fold would free {freed:,} tokens, less than {least:,} (~{ahead:.0f} requests ahead); waiting"
        economics = ctx.economics
        kept = projection - freed
        cost = economics.rewrite_premium * kept
        if economics.cache_read * freed * ahead < cost:
            return (f"a fold would free {freed:,} tokens but pay back only after "
                    f"{economics.payback_requests(kept, freed):.0f} requests (~{ahead:.0f} ahead); waiting")
        held = economics.cache_read * ctx.held_since_fold
        if projection <= ctx.budget.trigger and held < TIMELY_SHARE * cost:
            return (f"folding {freed:,} tokens would pay (~{ahead:.0f} requests ahead); carried "
                    f"{held:,.0f} of its {cost:,.0f} cost so far")
        return ""

    @staticmethod
    def _mandatory(ctx: PolicyView, reason: FoldReason, projection: int) -> Plan:
        budget = ctx.budget
        ratio = ctx.calibration.ratio
        chosen: list[Evictable] = []
        freed = 0
        for item in ctx.eviction_candidates():
            if projection - freed * ratio <= budget.target and freed >= budget.min_freed:
                break
            chosen.append(item)
            freed += item.gain
        if not chosen:
            return Plan(note="fold mandatory but nothing is evictable")
        return Plan(evict=tuple(chosen), reason=reason)


class KeepRecent:
    """Keep only the newest results raw; everything older leaves, every step.

    ``eager`` (keep 3 within 6,000 tokens, receipts) is the rule behind the original
    deadlock, kept for comparison; the replay evaluator builds others (its baselines).
    """

    manages_window = False

    def __init__(self, name: str, *, keep: int, max_tokens: int | None, reason: FoldReason,
                 turns: bool = False) -> None:
        """``turns``: ``keep`` counts the agent's turns that had results, not results."""
        self.name, self.keep, self.max_tokens, self.reason, self.turns = name, keep, max_tokens, reason, turns

    def plan(self, ctx: PolicyView, *, person_waiting: bool, overflow: bool) -> Plan:
        kept = kept_tokens = 0
        kept_steps: set[int] = set()
        evict: list[Observation] = []
        for obs in ctx.live_observations_newest_first():
            within = len(kept_steps | {obs.step}) <= self.keep if self.turns else kept < self.keep
            fits = within and (self.max_tokens is None or kept_tokens + obs.source.tokens <= self.max_tokens)
            if obs.state is ObsState.FRESH or (fits and not evict):
                kept += 1
                kept_tokens += obs.source.tokens
                kept_steps.add(obs.step)
            else:
                evict.append(obs)
        if not evict:
            return Plan(note="nothing older than the kept results")
        return Plan(evict=tuple(reversed(evict)), reason=self.reason)


def render_mask_stub(obs: Observation) -> str:
    """SWE-agent's `last_n_observations` stub."""
    return f"Old environment output: ({obs.source.text.count(chr(10)) + 1} lines omitted)"


@dataclass(frozen=True, slots=True)
class PolicyRow:
    """One eviction policy: how to make it (its window handling is its ``manages_window``),
    how its sessions are served (``notes``: the ledger's short notes for unchanged
    re-reads; the baselines serve every result whole, as the recorded agents had it),
    and what an agent profile's form calls it (None: the replay's alone)."""

    make: Callable[[], Policy]
    label: str | None
    serving: Serving = field(default_factory=Serving)


ON_DEMAND = "on_demand"
# In the order the replay reports them: the baseline first, production last.
POLICIES: dict[str, PolicyRow] = {
    "none": PolicyRow(NoEviction, "none (never evict)", Serving(notes=False)),
    "eager": PolicyRow(lambda: KeepRecent("eager", keep=3, max_tokens=6_000, reason=FoldReason.EAGER),
                       "eager (comparison only)", Serving(notes=False)),
    # SWE-agent's last_n_observations: the newest 5 results raw, the rest its stub.
    "mask-last-5": PolicyRow(lambda: KeepRecent("mask-last-5", keep=5, max_tokens=None, reason=FoldReason.MASK),
                             None, Serving(notes=False, receipt=render_mask_stub)),
    # JetBrains' observation masking ("The Complexity Trap", 2025): results of the
    # newest 10 turns raw, older ones SWE-agent's stub (docs/replay.md, "Peers").
    "masking-10": PolicyRow(lambda: KeepRecent("masking-10", keep=10, max_tokens=None, reason=FoldReason.MASK,
                                               turns=True), None, Serving(notes=False, receipt=render_mask_stub)),
    ON_DEMAND: PolicyRow(OnDemand, "on demand (default)"),
}


def policy_row(name: str) -> PolicyRow:
    row = POLICIES.get(name)
    if row is None:
        raise ValueError(f"unknown eviction policy {name!r}: use {', '.join(POLICIES)}")
    return row


def policy_named(name: str) -> Policy:
    return policy_row(name).make()


def profile_choices() -> list[tuple[str, str]]:
    """The policies an agent profile may choose, as a form's choices: the default first."""
    offered = [(name, row.label) for name, row in POLICIES.items() if row.label is not None]
    return sorted(offered, key=lambda choice: choice[0] != ON_DEMAND)
