"""Overflows and call ids through the step loop, with the fake host: an overflow folded and
retried once, then a new segment, then the session failed; ids a provider repeats or an
earlier segment used are minted afresh."""

from __future__ import annotations

import pytest

from agents.providers import ContextOverflow
from agents.tools.outcome import ToolOutcome
from observations.gateway.messages import ToolCall
from sessions.runtime.loop import StepLoop, unique_call_ids
from sessions.runtime.loop_state import RuntimeState
from sessions.runtime.units import Outcome
from tests.gateway.factories import make_context, shell_input
from tests.sessions.runtime.test_loop import FakeHost, run, turn


def test_a_provider_that_repeats_call_ids_gets_them_re_minted():
    host = FakeHost(turns=[turn("a", ("c1", "read_file", {"path": "x"}), ("c1", "read_file", {"path": "y"})),
                           turn("b", ("c1", "read_file", {"path": "z"})), turn("done")])
    loop, result = run(host)
    ids = [o.call_id for o in loop.ctx.observations]
    assert len(set(ids)) == 3 and ids[0] == "c1"
    assert host.executed == ids


def test_a_call_id_of_an_earlier_segment_is_re_minted_too():
    """An earlier segment's results are in the store only: its ids would replay their
    recorded outcomes for a new call."""
    host = FakeHost(turns=[turn("a", ("c1", "read_file", {"path": "x"})), turn("done")], earlier_ids={"c1"})
    ctx = make_context(window=60_000)
    ctx.obs_base = 5  # the session is in its second segment
    loop, result = run(host, ctx=ctx)
    assert host.executed != ["c1"] and len(host.executed) == 1


def test_an_overflow_is_folded_and_retried_once_never_resent_unchanged():
    ctx = make_context(window=20_000, output_budget=1_000)
    # Three different files: a call made again would supersede the first (is_hot).
    turns = [turn("read", (f"r{n}", "read_file", {"path": f"big{n}.py"})) for n in range(3)]
    host = FakeHost(turns=[*turns, ContextOverflow("prompt is too long"), turn("done")])

    def execute(call):
        host.executed.append(call.id)
        return ToolOutcome(call.id, call.name, dict(call.arguments), f"{call.id}\n" + "line of code\n" * 400)

    host.execute = execute
    loop, result = run(host, ctx=ctx)
    assert result.outcome is Outcome.SUCCEEDED
    overflowed, retried = host.requests[3], host.requests[4]
    assert overflowed.messages != retried.messages
    assert any(m.text.startswith("[receipt ") for m in retried.messages)
    assert [k for k in host.kinds() if k in ("model.overflow", "fold")] == ["model.overflow", "fold"]


def test_a_second_overflow_starts_a_new_segment_and_a_third_fails_the_session():
    ctx = make_context(window=20_000, output_budget=1_000)
    host = FakeHost(turns=[turn("read", ("r0", "read_file", {"path": "a"})), turn("again", ("r1", "read_file", {"path": "b"})),
                           ContextOverflow("too long"), ContextOverflow("too long"),
                           turn("## Progress and blockers\nread a and b"), ContextOverflow("too long")])
    host.execute = lambda call: ToolOutcome(call.id, call.name, {}, "x\n" * 2_000)
    loop, result = run(host, ctx=ctx)
    # A fold, then a new segment: neither request is the one refused; then it gives up.
    assert [k for k in host.kinds() if k in ("model.overflow", "fold", "segment.started")] == [
        "model.overflow", "fold", "model.overflow", "segment.started", "model.overflow"]
    # It says what it last tried (issue 28: it said "after a mandatory fold").
    assert result.outcome is Outcome.FAILED and "too long in a new segment started for it" in result.reason


@pytest.mark.parametrize("error", [ContextOverflow("too long")])
def test_an_overflow_with_nothing_to_evict_fails_with_a_clear_reason(error):
    loop, result = run(FakeHost(turns=[error]))
    assert result.outcome is Outcome.FAILED and "nothing is left to evict" in result.reason


def test_call_ids_are_re_minted_even_when_the_first_candidate_is_taken():

    loop = StepLoop(make_context(), RuntimeState(), FakeHost())
    taken = ("x", "x-3-0-1", "x-3-0-2")  # the second candidate of an earlier scheme looped forever
    for call_id in taken:
        loop.ctx.add_assistant("", (ToolCall(call_id, "read_file", {}),))
        loop.ctx.add_tool_result(shell_input(call_id, "ls", ""))
    loop.ctx.step = 3
    (minted,) = unique_call_ids((ToolCall("x", "read_file", {}),), loop.ctx, loop.host)
    assert minted.id == "x-3-0-3"
