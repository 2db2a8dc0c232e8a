"""One model request of a session, the same wherever it is made: the worker's step loop
(sessions/runtime/loop.py), the gateway endpoint (endpoint/feed.py) and the replay
(observations/replay/eval/engine.py) each give `TurnDriver` how to send and how to start
a new segment, and get the same decisions.

The request is the one the gateway prepares, in a new segment first when one is due. An
overflow is never sent again as it was (ARCHITECTURE.md, failure 3): the first forces a
fold (or, with nothing left to fold, a new segment), a second a new segment, and only when
even a fresh segment does not fit does the turn fail (ContextTooLarge). A client of the
endpoint hears the second overflow itself (``second_overflow_raises``): it is its request.
The provider's count of the request anchors the next projection.

Plain Python, no provider imported: a provider's "too long" error is an `Overflow`
(agents.providers.ContextOverflow subclasses it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from observations.gateway.context import Boundary, ContextTooLarge, SegmentNeeded, SessionContext

R = TypeVar("R")


class Overflow(Exception):
    """The provider refused the request as too long."""


@dataclass(frozen=True, slots=True)
class Usage:
    """What the provider counted of the request just sent."""

    input_tokens: int
    learn: bool = True  # False: a fallback model answered (another tokenizer): anchor on it, learn nothing


def _nothing(*_args) -> None:
    return None


@dataclass
class TurnDriver(Generic[R]):
    ctx: SessionContext
    send: Callable[[Boundary], tuple[R, Usage | None]]  # raises Overflow when the provider says too long
    start_segment: Callable[[str], None]  # the reason; resets ``ctx`` to a new segment
    on_boundary: Callable[[Boundary], None] = _nothing  # each request about to be sent (and its fold)
    on_overflow: Callable[[Boundary, Overflow], None] = _nothing
    person_waiting: bool = False
    second_overflow_raises: bool = False

    def run(self) -> R:
        """The reply of the request that fitted; raises ContextTooLarge when none can."""
        boundary = self._prepare()
        overflows = 0
        while True:
            self.on_boundary(boundary)
            try:
                reply, usage = self.send(boundary)
            except Overflow as exc:
                overflows += 1
                self.on_overflow(boundary, exc)
                if overflows > 1 and self.second_overflow_raises:
                    raise
                boundary = self._after_overflow(overflows)
                continue
            if usage is not None:
                self.ctx.record_usage(usage.input_tokens, learn=usage.learn)
            return reply

    def _prepare(self) -> Boundary:
        try:
            return self.ctx.prepare(person_waiting=self.person_waiting)
        except SegmentNeeded as need:
            self.start_segment(need.reason)
            return self.ctx.prepare(person_waiting=self.person_waiting)

    def _after_overflow(self, overflows: int) -> Boundary:
        ctx = self.ctx
        try:
            if overflows == 1:
                return ctx.after_overflow()
            if not (ctx.segments_enabled and ctx.step > ctx.segment_started_step):
                fresh = ctx.segments_enabled and ctx.segment_started_step == ctx.step
                raise ContextTooLarge("the provider still rejected the request as too long " + (
                    "in a new segment started for it" if fresh else "after a mandatory fold"))
            raise SegmentNeeded("the provider still rejected the folded request as too long")
        except SegmentNeeded as need:
            self.start_segment(need.reason)
            return ctx.prepare(person_waiting=self.person_waiting)
