"""What a policy sees of a session when it plans a fold: a read-only view. Policies only
choose; SessionContext applies their choice as one fold (folds.apply_fold)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from observations.gateway.budget import Budget, Calibration
from observations.gateway.economics import CacheEconomics
from observations.gateway.folds import Evictable
from observations.gateway.payloads import Payload
from observations.gateway.transcript import Observation, ObsState

if TYPE_CHECKING:
    from observations.gateway.context import SessionContext


@dataclass(frozen=True, slots=True)
class WorkingSet:
    results: set[int]  # obs_ids
    bodies: set[int]  # payload pids
    gain: int  # what an optional fold would otherwise free of it

    def holds(self, item: Evictable) -> bool:
        return item.pid in self.bodies if isinstance(item, Payload) else item.obs_id in self.results


class PolicyView:
    __slots__ = ("_ctx",)

    def __init__(self, ctx: SessionContext) -> None:
        self._ctx = ctx

    @property
    def budget(self) -> Budget:
        return self._ctx.budget

    @property
    def calibration(self) -> Calibration:
        return self._ctx.calibration

    @property
    def economics(self) -> CacheEconomics:
        return self._ctx.economics

    @property
    def postponements(self) -> int:
        return self._ctx.book.postponements

    @property
    def held_since_fold(self) -> int:
        return self._ctx.book.held_since_fold

    @property
    def received(self) -> int:
        """Tool results received so far, in every segment."""
        return self._ctx.obs_base + len(self._ctx.observations)

    def projection(self) -> int:
        return self._ctx.projection()

    def evictable_gain(self) -> int:
        return self._ctx.book.evictable_gain

    def eviction_candidates(self) -> Iterator[Evictable]:
        """Consumed results and payloads worth a receipt, oldest message first."""
        return self._ctx.book.candidates(self._ctx.observations, self._ctx.payloads)

    def consumed_items(self) -> Iterator[Evictable]:
        """Every consumed result and payload worth a receipt, whether a fold took it yet
        or not (the oracle's search bounds what a fold can free with it)."""
        ctx, book = self._ctx, self._ctx.book
        for items, upto in ((ctx.observations, book.consumed_upto), (ctx.payloads, book.payloads_consumed_upto)):
            for item in items[:upto]:
                if item.gain and item.state in (ObsState.CONSUMED, ObsState.RECEIPTED):
                    yield item

    def remaining_requests(self) -> float:
        return self._ctx.length_prior.remaining(self._ctx.step)

    def noted_targets(self) -> set[int]:
        """Results that a note the model has not seen yet points at (reads just asked for)."""
        ctx = self._ctx
        return {o.alias_of for o in ctx.observations[ctx.book.consumed_upto :] if o.alias_of is not None}

    def is_hot(self, item: Evictable) -> bool:
        """Still in use: from the agent's last two turns (what it wrote, and the results
        it asked for), unless superseded since (a read of a file written later, the
        output of a command run again later); and, whatever its age, a result that a
        note the model has not seen yet points at (the read it just asked for)."""
        ctx = self._ctx
        if isinstance(item, Observation) and item.obs_id in self.noted_targets():
            return True
        if item.step < ctx.step - 1:
            return False
        if isinstance(item, Payload):
            return True
        src = item.source
        if src.read is not None:
            note = ctx.notes.files.get(src.read.path)
            return not (note is not None and note.written and note.last_written > item.step)
        # The same call made again: the same tool with the same arguments (an editor's
        # "command" is only its subcommand: an edit of another file supersedes nothing).
        return not any(o.step > item.step and o.source.tool == src.tool and o.source.arguments == src.arguments
                       for o in ctx.observations[-8:])

    def working_set(self) -> WorkingSet | None:
        """The current text of the files the agent changed and still works on (touched
        within ``budget.working_set_steps`` steps): each file's newest read and the
        bodies written to it since (worknotes keeps them per file; a whole new body
        supersedes the ones before it). None when it holds nothing. Looked up per file,
        not by walking the session."""
        ctx = self._ctx
        steps = ctx.budget.working_set_steps
        notes = [note for note in ctx.notes.files.values()
                 if steps and note.written and ctx.step - note.last_step < steps]
        if not notes:
            return None
        results = {note.newest_read for note in notes if note.newest_read >= 0}
        bodies = {pid for note in notes for pid in note.bodies}
        items: list[Evictable] = [obs for obs_id in results if (obs := ctx.observation(obs_id)) is not None]
        items += [ctx.payloads[pid - ctx.payload_base] for pid in bodies
                  if 0 <= pid - ctx.payload_base < len(ctx.payloads)]
        # What a fold would otherwise free of it: consumed, worth a receipt, not hot.
        gain = sum(item.gain for item in items if item.state is ObsState.CONSUMED and item.gain and not self.is_hot(item))
        return WorkingSet(results, bodies, gain)

    def hot_gain(self) -> int:
        """What the candidates still in use (``is_hot``) would free; they are among the
        newest, so only the tail of the session is looked at."""
        ctx, book = self._ctx, self._ctx.book
        total = 0
        for obs_id in self.noted_targets():
            # An older result a fresh note points at (the tail's are counted below).
            obs = ctx.observation(obs_id)
            if obs is not None and obs.step < ctx.step - 1 and obs.state is ObsState.CONSUMED and obs.gain:
                total += obs.gain
        for items, upto in ((ctx.observations, book.consumed_upto), (ctx.payloads, book.payloads_consumed_upto)):
            for item in reversed(items[:upto]):
                if item.step < ctx.step - 1:
                    break
                if item.state is ObsState.CONSUMED and item.gain and self.is_hot(item):
                    total += item.gain
        return total

    def live_observations_newest_first(self) -> Iterator[Observation]:
        ctx = self._ctx
        for obs in reversed(ctx.observations[ctx.book.candidate_floor :]):
            if obs.state is not ObsState.RECEIPTED:
                yield obs
