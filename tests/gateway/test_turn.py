"""The turn driver the step loop, the gateway endpoint and the replay share: what each
overflow does, when a new segment starts, what anchors the next projection."""

from __future__ import annotations

import pytest

from agents.providers import CallRecord, Completion, ContextOverflow
from endpoint.feed import Exchange
from observations.gateway import segments
from observations.gateway.context import ContextTooLarge
from observations.gateway.messages import ModelTurn
from observations.gateway.policies import FoldReason
from observations.gateway.turn import Overflow, TurnDriver, Usage
from tests.gateway.factories import make_context
from tests.gateway.test_context import grow


class Script:
    """A provider that answers each request with the next of ``answers``: an Overflow,
    or the tokens it counted."""

    def __init__(self, *answers: Overflow | int) -> None:
        self.answers, self.boundaries, self.segments = list(answers), [], []

    def send(self, boundary):
        self.boundaries.append(boundary)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return "reply", Usage(answer)

    def start_segment(self, ctx):
        def start(reason: str) -> None:
            self.segments.append(reason)
            segments.start_segment(ctx, segments.handoff_for(ctx, reason=reason, prose=segments.records_prose(ctx),
                                                             prose_source="records"))

        return start


def grown():
    ctx = make_context(window=60_000, output_budget=1_000)
    grow(ctx, 20)
    ctx.add_assistant("next")
    return ctx


def test_a_first_overflow_is_folded_and_sent_again_never_unchanged_and_the_count_anchors():
    ctx, script = grown(), Script(Overflow("too long"), 9_000)
    assert TurnDriver(ctx, script.send, script.start_segment(ctx)).run() == "reply"
    first, retry = script.boundaries
    assert retry.fold is not None and retry.fold.reason is FoldReason.OVERFLOW
    assert retry.request.messages != first.request.messages and not script.segments
    assert ctx.projection() == 9_000


def test_a_second_overflow_starts_a_new_segment_and_a_third_gives_up():
    ctx, script = grown(), Script(Overflow("too long"), Overflow("too long"), 5_000)
    TurnDriver(ctx, script.send, script.start_segment(ctx)).run()
    assert script.segments == ["the provider still rejected the folded request as too long"]
    assert ctx.segment == 2 and len(script.boundaries) == 3

    ctx, script = grown(), Script(*[Overflow("too long")] * 3)
    with pytest.raises(ContextTooLarge, match="in a new segment started for it"):
        TurnDriver(ctx, script.send, script.start_segment(ctx)).run()


def test_a_client_hears_the_second_overflow_itself():
    ctx, script = grown(), Script(Overflow("first"), Overflow("second"))
    with pytest.raises(Overflow, match="second"):
        TurnDriver(ctx, script.send, script.start_segment(ctx), second_overflow_raises=True).run()
    assert not script.segments and len(script.boundaries) == 2


def test_each_request_and_each_overflow_is_told_before_the_next_is_sent():
    ctx, script = grown(), Script(Overflow("too long"), 9_000)
    told = []
    TurnDriver(ctx, script.send, script.start_segment(ctx), on_boundary=lambda b: told.append(("request", b)),
               on_overflow=lambda b, exc: told.append(("overflow", b))).run()
    assert [kind for kind, _ in told] == ["request", "overflow", "request"]
    assert [b for _, b in told] == [script.boundaries[0], script.boundaries[0], script.boundaries[1]]


def test_a_fallback_models_count_anchors_the_projection_but_teaches_nothing():
    ratios = {}
    for learn in (False, True):
        ctx = make_context(window=100_000, output_budget=1_000)
        grow(ctx, 3)
        counted = ctx.projection() * 2
        TurnDriver(ctx, lambda b, n=counted, learn=learn: ("reply", Usage(n, learn=learn)), lambda reason: None).run()
        assert ctx.projection() == counted
        ratios[learn] = ctx.calibration.ratio
    assert ratios[False] == 1.0 < ratios[True]


def test_the_endpoints_exchange_makes_the_drivers_requests():
    """The endpoint drives its turn through the same driver: the same answers on the same
    history give the same requests, and a provider's overflow is the driver's."""
    assert issubclass(ContextOverflow, Overflow)
    ctx, script = grown(), Script(Overflow("too long"), 9_000)
    TurnDriver(ctx, script.send, script.start_segment(ctx), second_overflow_raises=True).run()

    class Upstream:
        def __init__(self) -> None:
            self.requests, self.answers, self.events = [], ["overflow", 9_000], []

        def call_model(self, request, on_delta=None):
            self.requests.append(request)
            answer = self.answers.pop(0)
            record = CallRecord(model="t:m", requested_model="t:m", prefix_hash="", input_tokens=answer
                                if answer != "overflow" else 0, usage_reported=answer != "overflow")
            if answer == "overflow":
                exc = ContextOverflow("too long")
                exc.record = record
                raise exc
            return Completion(ModelTurn(text="reply", tool_calls=()), record)

        def emit(self, kind, payload):
            self.events.append(kind)

    upstream = Upstream()
    other = grown()
    exchange = Exchange(other, upstream)
    exchange.run()
    assert [r.messages for r in upstream.requests] == [b.request.messages for b in script.boundaries]
    assert [r.usage_reported for r in exchange.records] == [False, True]  # the refused call is on the record too
    assert upstream.events == ["model.overflow", "fold"]
    assert other.projection() == ctx.projection() == 9_000
