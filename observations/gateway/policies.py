"""Eviction policies: at a step boundary, which observations leave the context.

Policies only choose; SessionContext applies the choice as one fold (an epoch
change), so the request stays append-only between folds.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from observations.gateway.transcript import Observation, ObsState

if TYPE_CHECKING:
    from observations.gateway.context import SessionContext

# A receipt costs tokens too: evicting a result barely larger than its receipt gains
# nothing and still breaks the cached prefix.
MIN_GAIN_TOKENS = 64

# Provider prompt-cache prices relative to an uncached input token (Anthropic's
# published multipliers; OpenAI's automatic caching is similar).
CACHE_READ_PRICE = 0.10
CACHE_WRITE_PRICE = 1.25


def payback_requests(rewritten: float, freed: float) -> float:
    """Later requests a fold needs to pay for itself.

    The fold request re-sends the ``rewritten`` tokens after its first receipt as a
    cache write instead of a cache read; every later request then reads ``freed``
    fewer cached tokens. So it pays back after (1.25 − 0.1)·P/(0.1·S) − 1 ≈
    11.5·P/S − 1 requests (ARCHITECTURE.md, "The economics a fold must respect").
    """
    if freed <= 0:
        return float("inf")
    cost = (CACHE_WRITE_PRICE - CACHE_READ_PRICE) * rewritten
    return cost / (CACHE_READ_PRICE * freed) - 1


class FoldReason(StrEnum):
    TRIGGER = "trigger"
    CEILING = "ceiling"
    OVERFLOW = "overflow"
    EAGER = "eager"
    MASK = "mask"


@dataclass(frozen=True, slots=True)
class Plan:
    evict: tuple[Observation, ...] = ()
    reason: FoldReason | None = None
    postpone: bool = False
    # Why nothing happened, for the session log ("under trigger", "too small", ...).
    note: str = ""


class Policy(Protocol):
    name: str

    def plan(self, ctx: SessionContext, *, person_waiting: bool, overflow: bool) -> Plan: ...


class NoEviction:
    name = "none"

    def plan(self, ctx: SessionContext, *, person_waiting: bool, overflow: bool) -> Plan:
        return Plan(note="policy none never evicts")


class OnDemand:
    """Fold only when the projected request needs it, in one large chunk.

    Under the trigger nothing happens. Above it a fold is due, and may wait up to
    ``max_postponements`` boundaries while a person waits for an answer. Above the
    ceiling (or after a provider overflow) it is mandatory. A fold evicts consumed
    results oldest first until the projection is at or below the target *and* at least
    ``min_freed`` tokens are freed, or the candidates run out.

    A due fold must also be worth the cache it breaks: it has to free at least
    ``min_freed`` tokens and pay back (`payback_requests`) within as many requests as
    the session has made so far, the best guess of the work still ahead (a session
    that has run k steps is about as likely as not to run k more). Otherwise it waits,
    and the ceiling makes it mandatory if the session gets there. Replaying the
    development set showed due folds that could not reach the target but freed a
    large chunk to be the cheapest folds there are (docs/replay.md).
    """

    name = "on_demand"

    def plan(self, ctx: SessionContext, *, person_waiting: bool, overflow: bool) -> Plan:
        budget = ctx.budget
        projection = ctx.projection()
        if overflow:
            # The provider says it does not fit: our projection was low. Fold as if at
            # least the whole window were used.
            reason, projection = FoldReason.OVERFLOW, max(projection, budget.window + 1)
        elif projection > budget.ceiling:
            reason = FoldReason.CEILING
        elif projection > budget.trigger:
            if person_waiting and ctx.postponements < budget.max_postponements:
                return Plan(postpone=True, note="fold due, postponed: a person is waiting")
            reason = FoldReason.TRIGGER
        else:
            return Plan(note="under trigger")

        mandatory = reason is not FoldReason.TRIGGER
        ratio = ctx.calibration.ratio
        # Cheap feasibility check before walking: the most any fold could free.
        evictable = ctx.evictable_gain()
        if not mandatory and evictable < budget.min_freed:
            note = (
                f"fold due but evicting all it may frees only {evictable:,} of the "
                f"{budget.min_freed:,} tokens a fold must free"
            )
            if projection - evictable * ratio > budget.target:
                note += "; it cannot reach the target either"
            return Plan(note=note + "; waiting for the ceiling")

        chosen: list[Observation] = []
        freed = 0
        for obs in ctx.eviction_candidates():
            if projection - freed * ratio <= budget.target and freed >= budget.min_freed:
                break
            chosen.append(obs)
            freed += obs.gain
        if not chosen:
            return Plan(note="fold due but nothing is evictable")
        if not mandatory:
            if freed < budget.min_freed:
                return Plan(note="fold due but too small to pay for the cache it breaks")
            # Everything before the first receipt stays a cache read.
            kept_prefix = ctx.header_tokens + sum(ctx.message_tokens()[: chosen[0].entry_index])
            rewritten = projection - (freed + kept_prefix) * ratio
            payback = payback_requests(rewritten, freed * ratio)
            if payback > ctx.step:
                return Plan(
                    note=f"fold due but it would pay back only after {payback:.0f} requests "
                    f"({ctx.step} so far); waiting"
                )
        return Plan(evict=tuple(chosen), reason=reason)


class KeepRecent:
    """Keep only the newest results raw; everything older leaves, every step.

    ``eager`` (keep 3 within 6,000 tokens, receipts) is the rule behind the original
    deadlock, kept for comparison; ``mask-last-5`` is SWE-agent's last_n_observations
    (keep 5, one-line stubs), used by the replay evaluator.
    """

    def __init__(self, name: str, *, keep: int, max_tokens: int | None, reason: FoldReason) -> None:
        self.name, self.keep, self.max_tokens, self.reason = name, keep, max_tokens, reason

    def plan(self, ctx: SessionContext, *, person_waiting: bool, overflow: bool) -> Plan:
        kept = kept_tokens = 0
        evict: list[Observation] = []
        for obs in ctx.live_observations_newest_first():
            fits = kept < self.keep and (
                self.max_tokens is None or kept_tokens + obs.source.tokens <= self.max_tokens
            )
            if obs.state is ObsState.FRESH or (fits and not evict):
                kept += 1
                kept_tokens += obs.source.tokens
            else:
                evict.append(obs)
        if not evict:
            return Plan(note="nothing older than the kept results")
        return Plan(evict=tuple(reversed(evict)), reason=self.reason)


def policy_named(name: str) -> Policy:
    if name == "on_demand":
        return OnDemand()
    if name == "none":
        return NoEviction()
    if name == "eager":
        return KeepRecent("eager", keep=3, max_tokens=6_000, reason=FoldReason.EAGER)
    if name == "mask-last-5":
        return KeepRecent("mask-last-5", keep=5, max_tokens=None, reason=FoldReason.MASK)
    raise ValueError(f"unknown eviction policy {name!r}: use on_demand, eager, none or mask-last-5")
