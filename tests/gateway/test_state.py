"""A context saved to JSON and restored elsewhere sends exactly the same requests."""

from __future__ import annotations

import json

import pytest

from observations.gateway.messages import serialize_request
from observations.gateway.state import dump_state, load_state
from tests.gateway.factories import TOOLS, call, file_text, make_context, read_input, shell_input


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
