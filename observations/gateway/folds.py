"""Folds: the bookkeeping of what a session's results and payloads could free, and the
application of a policy's plan as one fold (an epoch change).

``FoldBook`` keeps the sums as the session goes, so a boundary never walks a long
session, and the floors below which nothing is a fold candidate any more.
``apply_fold`` is part of SessionContext (it uses its transcript and ledger); it is kept
here so that context.py stays about building and deciding.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from observations.gateway import receipts
from observations.gateway.payloads import Payload
from observations.gateway.policies import MIN_GAIN_TOKENS, FoldReason, Plan
from observations.gateway.transcript import Observation, ObsState

if TYPE_CHECKING:
    from observations.gateway.context import SessionContext

Evictable = Observation | Payload


@dataclass(frozen=True, slots=True)
class FoldRecord:
    number: int  # 1-based, per session
    step: int
    epoch: int  # the epoch this fold started
    reason: FoldReason
    postponements: int
    projection_before: int
    projection_after: int
    evicted: tuple[int, ...]  # obs_ids
    tokens_freed: int  # estimated, before calibration
    first_changed_message: int  # index into request.messages
    payloads: tuple[int, ...] = ()  # payload ids receipted
    revived: tuple[int, ...] = ()  # obs_ids of notes not sent yet that it served as their text


class FoldBook:
    def __init__(self) -> None:
        self.folds: list[FoldRecord] = []
        self.epoch = 0
        self.postponements = 0  # due folds put off in a row while a person waited
        self.evictable_gain = 0  # sum of gains over consumed, unevicted results and payloads
        self.receipted_gain = 0  # tokens the standing receipts keep out of each request
        self.held_since_fold = 0  # Σ over requests since the last fold of what a fold would free
        self.sent_tokens_total = 0  # projected input tokens of every request assembled
        self.saved_tokens_total = 0  # what the receipts kept out of those requests
        self.consumed_upto = 0  # observations before this index are no longer fresh
        self.payloads_consumed_upto = 0
        self.candidate_floor = 0  # observations before this index are all receipted
        self.gain_floor = 0  # ... or can never be fold candidates again
        self.payload_floor = 0  # the same for payloads

    def consume(self, item: Evictable, gain: int) -> None:
        """The model has seen ``item``: from now on a fold may take it."""
        item.state = ObsState.CONSUMED
        item.gain = gain if gain >= MIN_GAIN_TOKENS else 0
        self.evictable_gain += item.gain

    def receipt(self, items: tuple[Evictable, ...], number: int) -> None:
        for item in items:
            if item.state is ObsState.CONSUMED:
                self.evictable_gain -= item.gain
                self.receipted_gain += item.gain
            item.state, item.fold = ObsState.RECEIPTED, number

    def candidates(self, observations: list[Observation], payloads: list[Payload]) -> Iterator[Evictable]:
        """Consumed results and payloads worth a receipt, oldest message first."""
        results = (o for o in observations[self.gain_floor : self.consumed_upto]
                   if o.state is ObsState.CONSUMED and o.gain)
        worth = [p for p in payloads[self.payload_floor : self.payloads_consumed_upto]
                 if p.state is ObsState.CONSUMED and p.gain]
        if not worth:
            yield from results
            return
        yield from sorted([*results, *worth], key=lambda item: item.entry_index)

    def advance_floors(self, observations: list[Observation], payloads: list[Payload]) -> None:
        floor = self.candidate_floor
        while floor < len(observations) and observations[floor].state is ObsState.RECEIPTED:
            floor += 1
        self.candidate_floor = floor
        # What can never be a fold candidate again (receipted, or consumed with nothing
        # to gain): a boundary looks only at the part of a long session still in play.
        self.gain_floor = _past_settled(observations, max(self.gain_floor, floor), self.consumed_upto)
        self.payload_floor = _past_settled(payloads, self.payload_floor, self.payloads_consumed_upto)

    def counted(self, projection: int, ratio: float) -> None:
        """A request of ``projection`` tokens was assembled."""
        self.sent_tokens_total += projection
        self.saved_tokens_total += round(self.receipted_gain * ratio)
        self.held_since_fold += round(self.evictable_gain * ratio)

    def segment_emptied(self) -> None:
        """The segment ended: nothing of it is a candidate or held any more."""
        self.evictable_gain = self.receipted_gain = 0
        self.consumed_upto = self.payloads_consumed_upto = 0
        self.candidate_floor = self.gain_floor = self.payload_floor = 0


def _past_settled(items: list, floor: int, consumed_upto: int) -> int:
    while floor < consumed_upto and (items[floor].state is ObsState.RECEIPTED or not items[floor].gain):
        floor += 1
    return floor


def apply_fold(ctx: SessionContext, plan: Plan) -> FoldRecord:
    """Receipt what ``plan`` evicts, as one fold: a new epoch of the request."""
    book, transcript = ctx.book, ctx.transcript
    before = ctx.projection()
    if plan.reason is FoldReason.OVERFLOW:
        before = max(before, ctx.budget.window + 1)
    number = len(book.folds) + 1
    evicted = [item.obs_id for item in plan.evict if isinstance(item, Observation)]
    payload_ids = [item.pid for item in plan.evict if isinstance(item, Payload)]
    book.receipt(plan.evict, number)
    ctx.ledger.evicted(evicted, number)
    changed = _entries_to_rerender(ctx, set(evicted))
    changed += [item.entry_index for item in plan.evict if isinstance(item, Payload)]
    changed = sorted(set(changed))
    freed = sum(transcript.rerender(index) for index in changed)
    ctx.anchor.drop()
    revived: list[Observation] = []
    if plan.reason is not FoldReason.OVERFLOW:  # after an overflow our projection is known to be low
        revived, grown = _serve_fresh_notes(ctx, set(evicted))
        changed, freed = sorted(set(changed + [o.entry_index for o in revived])), freed - grown
    if ctx.intent_updates:
        # A new epoch may restate the intent at the top instead of in updates.
        changed.append(0)
        freed += _rewrite_intent_block(ctx)
    book.epoch += 1
    book.postponements, postponed = 0, book.postponements
    book.held_since_fold = 0
    book.advance_floors(ctx.observations, ctx.payloads)
    first_changed = min(changed) if changed else len(transcript.messages)
    transcript.new_epoch()
    record = FoldRecord(
        number=number, step=ctx.step, epoch=book.epoch, reason=plan.reason or FoldReason.TRIGGER,
        postponements=postponed, projection_before=before, projection_after=ctx.projection(),
        evicted=tuple(evicted), tokens_freed=freed, first_changed_message=first_changed,
        payloads=tuple(payload_ids), revived=tuple(o.obs_id for o in revived),
    )
    book.folds.append(record)
    return record


def _serve_fresh_notes(ctx: SessionContext, evicted: set[int]) -> tuple[list[Observation], int]:
    """A note the model has not seen yet, whose text this fold evicted, becomes that
    text (a re-read after the fold) where the request stays under the fold trigger
    (a margin below the ceiling, for the estimate's error):
    a read just asked for must not be answered with "not in the context any more"
    (the eviction deadlock). Called after the ledger was told of the eviction and
    the evicted entries were re-rendered. Returns the notes served as text and the
    tokens they grew by."""
    revived, grown = [], 0
    for obs in ctx.observations[ctx.book.consumed_upto :]:
        if obs.alias_of not in evicted or obs.state is not ObsState.FRESH or obs.source.read is None:
            continue
        target, obs.alias_of = obs.alias_of, None
        growth = -ctx.transcript.rerender(obs.entry_index)
        if ctx.projection() > ctx.budget.trigger:
            obs.alias_of = target  # no room for the text: its honest receipt stays
            ctx.transcript.rerender(obs.entry_index)
            continue
        obs.reread_of = target
        ctx.ledger.received(obs.source.read, obs.obs_id, ctx.step)
        revived.append(obs)
        grown += growth
    return revived, grown


def _entries_to_rerender(ctx: SessionContext, evicted: set[int]) -> list[int]:
    return [obs.entry_index for obs in ctx.observations[ctx.book.candidate_floor :]
            if obs.obs_id in evicted or (obs.alias_of in evicted and obs.state is not ObsState.RECEIPTED)]


def _rewrite_intent_block(ctx: SessionContext) -> int:
    transcript, freed = ctx.transcript, 0
    if transcript.entries and transcript.entries[0].kind == "intent":
        transcript.entries[0].text = receipts.render_intent_block(ctx.intent_text, ctx.intent_path)
        freed += transcript.rerender(0)
    for entry in ctx.intent_updates:
        entry.text = receipts.INTENT_UPDATE_FOLDED
        freed += transcript.rerender(entry.meta["index"])
    ctx.intent_updates.clear()
    return freed
