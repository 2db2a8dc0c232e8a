"""The step loop starting new segments, in memory (fake host, scripted turns)."""

from __future__ import annotations

from agents.providers import CallRecord, Completion, ContextOverflow, Transient
from observations.gateway.messages import ModelTurn, Usage
from observations.gateway.tokens import estimate_request_message, estimate_tokens
from sessions.runtime.approvals import Rule
from sessions.runtime.delivery import Input
from sessions.runtime.loop import StepLoop
from sessions.runtime.loop_state import RuntimeState
from sessions.runtime.units import Approval, Outcome
from tests.gateway.factories import make_context
from tests.sessions.runtime.test_loop import FakeHost, run, turn

INTENT = "# Task 7: add the parser\n\n## Objective\nWrite the parser.\n\n## Constraints (the person's own words)\nDon't touch vendor/.\n"
PROSE = "## Progress and blockers\nThe parser reads headers.\n## Next step\nParse the body."


def writer_turns(n: int) -> list[ModelTurn]:
    """Each turn writes a 60-line file: the agent's own payloads fill the window."""
    body = "".join(f"def f{i}(x):\n    return x + {i}  # a line of the parser\n" for i in range(30))
    return [turn(f"writing part {k}", (f"w{k}", "write_file", {"path": f"src/p{k}.py", "content": body}))
            for k in range(n)]


def handoff_requests(host: FakeHost):
    return [r for r in host.requests if r.purpose == "handoff"]


def test_a_session_that_writes_a_file_every_step_goes_on_through_new_segments():
    host = FakeHost(turns=[])
    host.turns = writer_turns(150) + [turn("done"), turn("done: no check applies")]
    answers = iter(host.turns)

    def call_model(request):
        host.requests.append(request)
        if request.purpose == "handoff":
            return completion(PROSE, request)
        return completion_of(next(answers), request)

    host.call_model = call_model
    ctx = make_context(window=8_000, output_budget=500, intent=INTENT)
    loop = StepLoop(ctx, RuntimeState(), host, clock=lambda: 1_000.0)
    closed = []
    for _ in range(1_000):
        result = loop.advance()
        if result.closed_segment:
            closed.append(result.closed_segment)
        if result.outcome is not Outcome.CONTINUE:
            break
    assert result.outcome is Outcome.SUCCEEDED
    assert ctx.segment >= 3 and len(closed) == ctx.segment - 1
    prose_calls = handoff_requests(host)
    assert len(prose_calls) == ctx.segment - 1
    # No output limit of ours but the window's: what the prose request leaves of it.
    budget = ctx.budget
    assert all(r.max_tokens >= budget.output_budget for r in prose_calls)
    assert any(r.max_tokens > budget.output_budget for r in prose_calls)
    steps = [r for r in host.requests if r.purpose == "step"]
    assert all(r.system == steps[0].system and r.tools == steps[0].tools for r in steps)
    after_reset = [r for r in steps if any(m.text.startswith("# Handoff:") for m in r.messages)]
    for request in after_reset:
        assert "Don't touch vendor/." in request.messages[0].text  # the intent block, first
        handoff = request.messages[1].text
        assert "## Decisions" in handoff and "Don't touch vendor/." in handoff
        assert "The parser reads headers." in handoff and "Parse the body." in handoff
    started = [p for k, p in host.events if k == "segment.started"]
    assert [p["segment"] for p in started] == list(range(2, ctx.segment + 1))
    assert all(p["prose"] == "model" for p in started)
    # Each ended segment goes to the searchable record, calls with their payload refs.
    number, history = closed[0]
    assert number == 1 and any(item.kind == "call" and item.ref for item in history)


def test_when_the_prose_call_fails_the_handoff_comes_from_records_and_the_session_goes_on():
    host = FakeHost(turns=[])
    answers = iter(writer_turns(150) + [turn("done"), turn("done: no check applies")])

    def call_model(request):
        host.requests.append(request)
        if request.purpose == "handoff":
            raise Transient("the provider is overloaded")
        return completion_of(next(answers), request)

    host.call_model = call_model
    ctx = make_context(window=8_000, output_budget=500, intent=INTENT)
    loop, result = run(host, ctx=ctx, limit=1_000)
    assert result.outcome is Outcome.SUCCEEDED and ctx.segment >= 2
    assert "segment.prose_failed" in host.kinds()
    started = [p for k, p in host.events if k == "segment.started"]
    assert started and all(p["prose"] == "records" for p in started)
    assert "steps so far" in started[0]["handoff"]


def test_a_person_can_ask_for_a_new_segment():
    host = FakeHost(turns=[turn("look", ("r0", "read_file", {"path": "a.py"})), completion_text(PROSE), turn("done")])
    ctx = make_context(window=60_000, intent=INTENT)
    loop = StepLoop(ctx, RuntimeState(), host, clock=lambda: 1_000.0)
    loop.advance()  # the first step
    loop.advance()  # its call
    host.segment_asked = "ann"
    result = loop.advance()
    assert ctx.segment == 2 and result.closed_segment is not None
    started = next(p for k, p in host.events if k == "segment.started")
    assert started["reason"] == "asked for by ann"


def test_a_replaced_steer_is_marked_superseded_and_a_denial_with_its_reason_is_a_decision():
    host = FakeHost(
        turns=[turn("try", ("s0", "shell", {"command": "rm -rf build"})), completion_text(PROSE), turn("done")],
        rules=[Rule("ask")],
        approvals={"s0": Approval("denied", by="bob", reason="build/ holds the release artefacts")},
        inputs=[Input(1, 1, "steer", "ann", "use tabs")],
    )
    ctx = make_context(window=60_000, intent=INTENT)
    loop = StepLoop(ctx, RuntimeState(), host, clock=lambda: 1_000.0)
    loop.advance()  # the steer taken
    loop.advance()
    loop.advance()  # the denied call
    host.inputs = [Input(2, 2, "steer", "ann", "use spaces, not tabs", replaces=(2,))]
    host.segment_asked = "ann"
    loop.advance()  # the steer taken
    loop.advance()
    handoff = next(p["handoff"] for k, p in host.events if k == "segment.started")
    active, superseded = handoff.split("Superseded (NOT in force")
    assert "D1 (task constraint): Don't touch vendor/." in active
    assert "use spaces, not tabs" in active and "use tabs" not in active
    assert "build/ holds the release artefacts" in active and "rm -rf build" in active
    assert "D2 (steer from ann, step 0; replaced by D4): use tabs" in superseded
    assert "[steer from ann, D4, replaces D2] use spaces, not tabs" in host.requests[-1].messages[-1].text


def test_an_overflow_with_nothing_left_to_fold_starts_a_new_segment_instead_of_failing():
    ctx = make_context(window=60_000, intent=INTENT)
    host = FakeHost(turns=[turn("a", ("r0", "read_file", {"path": "a"})), turn("b", ("r1", "read_file", {"path": "b"})),
                           ContextOverflow("prompt is too long"), completion_text(PROSE), turn("done")])
    loop, result = run(host, ctx=ctx)
    assert result.outcome is Outcome.SUCCEEDED and ctx.segment == 2
    assert "the provider rejected" in next(p["reason"] for k, p in host.events if k == "segment.started")


def completion(text: str, request):
    return completion_of(ModelTurn(text, (), Usage()), request)


def completion_text(text: str) -> ModelTurn:
    return ModelTurn(text, (), Usage(input_tokens=1_000))


def completion_of(reply: ModelTurn, request):
    """The provider counts what it was sent (our own estimate, as a steady tokenizer would)."""
    sent = estimate_tokens(request.system) + sum(estimate_request_message(m) for m in request.messages)
    return Completion(reply, CallRecord(model="fake", requested_model="fake", prefix_hash="",
                                        input_tokens=sent, usage_reported=True))
