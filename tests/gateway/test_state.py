"""A context saved to JSON and restored elsewhere sends exactly the same requests."""

from __future__ import annotations

import copy
import json

import pytest

from observations.gateway import segments
from observations.gateway.context import SegmentNeeded
from observations.gateway.messages import serialize_request
from observations.gateway.state import dump_state, load_state
from tests.gateway.factories import (
    TOOLS,
    call,
    file_text,
    make_context,
    new_segment,
    read_input,
    shell_input,
)


def step(ctx, n: int) -> None:
    ctx.add_assistant(f"step {n}", (call(f"a{n}", path=f"f{n % 9}.py"), call(f"b{n}", "shell")))
    ctx.add_tool_result(read_input(f"a{n}", f"f{n % 9}.py", file_text(f"f{n % 9}.py", n // 18, 120)))
    ctx.add_tool_result(shell_input(f"b{n}", "pytest", f"{n} passed\n" * (n % 7 * 30)))
    if n % 11 == 0:
        ctx.add_user(f"steer {n}: keep it small", kind="steer")
    if n == 13:
        ctx.refresh_intent(ctx.intent_file_text + "\nAlso: no new dependencies.")


def restore(ctx):
    state = json.loads(json.dumps(dump_state(ctx)))
    texts = {o.source.sha256: o.source.text for o in ctx.observations}
    return load_state(state, texts=texts, model=ctx.model, system_prompt=ctx.system_prompt, tools=TOOLS,
                      budget=ctx.budget, policy=ctx.policy.name, calibration=ctx.calibration)


@pytest.mark.parametrize("stop_at", [0, 5, 17, 30])
def test_a_restored_context_continues_byte_for_byte(stop_at):
    original = make_context(window=30_000, output_budget=1_000)
    original.add_user("Fix it.", kind="task")
    for n in range(stop_at):
        original.prepare()
        original.record_usage(round(original.estimate * 1.2))
        step(original, n)
    copy = restore(original)
    for n in range(stop_at, stop_at + 25):
        a, b = original.prepare(), copy.prepare()
        assert serialize_request(a.request) == serialize_request(b.request)
        assert a.projection == b.projection and (a.fold is None) == (b.fold is None)
        for ctx in (original, copy):
            ctx.record_usage(round(ctx.estimate * 1.2))
            step(ctx, n)
    assert original.folds, "the run must have folded to test restoring receipts"
    assert dump_state(original) == dump_state(copy)


def test_a_missing_blob_is_reported_by_call_id():
    ctx = make_context()
    ctx.add_assistant("s", (call("c1", "shell"),))
    ctx.add_tool_result(shell_input("c1", "ls", "a\nb\n"))
    with pytest.raises(KeyError, match="c1"):
        load_state(dump_state(ctx), texts={}, model="m", system_prompt="", tools=(), budget=ctx.budget)


def busy_step(ctx, n: int) -> None:
    """A step with everything a segment holds: payloads (a file body, a heredoc, long
    reasoning), people's decisions (one replacing another), results to fold."""
    body = file_text(f"m{n % 4}.py", n, 40)
    reasoning = f"Step {n}: " + " ".join(f"maybe branch {k} of m{n % 4}.py is wrong." for k in range(30))
    ctx.add_assistant(reasoning, (call(f"w{n}", "write_file", path=f"m{n % 4}.py", content=body),
                                  call(f"h{n}", "shell", command=f"cat > t{n}.py <<'EOF'\n{body}\nEOF\npytest -q")))
    ctx.add_tool_result(shell_input(f"w{n}", f"write m{n % 4}.py", f"wrote m{n % 4}.py"))
    ctx.add_tool_result(shell_input(f"h{n}", "pytest", f"{n} passed\n" * (n % 5 * 40)))
    if n % 6 == 0:
        earlier = [d.number for d in ctx.decisions.active() if d.kind == "steer"][-1:]
        ctx.add_person(kind="steer", author="alice", text=f"steer {n}:\n- keep it small\n- no new files",
                       replaces=tuple(earlier) if n % 12 == 0 else ())


def restore_all(ctx):
    state = json.loads(json.dumps(dump_state(ctx)))
    return load_state(state, texts={o.source.sha256: o.source.text for o in ctx.observations}, model=ctx.model,
                      system_prompt=ctx.system_prompt, tools=TOOLS, budget=ctx.budget, policy=ctx.policy.name,
                      calibration=copy.deepcopy(ctx.calibration))  # its own: each run learns


def advance(ctx, n: int) -> tuple[str, list]:
    try:
        boundary = ctx.prepare()
    except SegmentNeeded as need:
        new_segment(ctx, need.reason)
        boundary = ctx.prepare()
    history = [(i.kind, i.text) for i in segments.closing_history(ctx)]
    ctx.record_usage(round(ctx.estimate * 1.1))
    busy_step(ctx, n)
    return serialize_request(boundary.request), history


@pytest.mark.parametrize("stop_at", [7, 19, 33])
def test_a_restored_context_with_payloads_decisions_and_segments_continues_byte_for_byte(stop_at):
    original = make_context(window=12_000, output_budget=1_000, segment_ratio=0.6)
    original.add_user("Fix it.", kind="task")
    for n in range(stop_at):
        advance(original, n)
    restored = restore_all(original)
    assert dump_state(restored) == dump_state(original)
    for n in range(stop_at, stop_at + 30):
        assert advance(original, n) == advance(restored, n)
    assert original.segment > 2 and original.payloads and original.decisions.superseded()
    assert dump_state(original) == dump_state(restored)
