"""The comparison-only gateway rules live in the replay package, not in production."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import observations.gateway
from observations.gateway.budget import Budget
from observations.gateway.policies import policy_named
from observations.gateway.transcript import ObsState
from observations.replay.eval.baselines import ComparisonContext, mask_last_5, render_mask_stub
from tests.gateway.factories import TOOLS, read_input
from tests.gateway.test_deadlock import CONFIG, agent_rereads_config


def comparison_context(**options) -> ComparisonContext:
    return ComparisonContext(model="test:model", system_prompt="You are a careful coding agent.", tools=TOOLS,
                             budget=Budget(window=128_000, output_budget=8_000), intent_text="Objective: fix it.",
                             intent_path=".atrium/tasks/1/intent.md", **options)


def test_eager_with_room_dedup_denies_every_reread():
    ctx = comparison_context(policy="eager", room_seen=set())
    answers = agent_rereads_config(ctx, attempts=5)
    first = ctx.observations[0]
    assert first.state is ObsState.RECEIPTED  # evicted by the eager rule
    assert all(CONFIG not in answer for answer in answers)
    assert all(answer.startswith("[already read]") for answer in answers)
    # Nothing anywhere in the request holds the text: the agent is stuck.
    assert not any(CONFIG in message.text for message in ctx.prepare().request.messages)


def test_masking_stubs_old_outputs_with_swe_agents_line():
    ctx = comparison_context(policy=mask_last_5(), receipt=render_mask_stub, notes=False)
    ctx.add_user("Read everything.", kind="task")
    for n in range(7):
        ctx.prepare()
        ctx.add_assistant(f"reading {n}", ())
        ctx.add_tool_result(read_input(f"c{n}", f"src/f{n}.py", "a\nb\nc\n"))
    ctx.prepare()
    assert ctx.shown_text(ctx.observations[0]) == "Old environment output: (4 lines omitted)"


def test_the_production_gateway_knows_no_comparison_only_rule():
    with pytest.raises(ValueError):
        policy_named("mask-last-5")
    core = Path(observations.gateway.__file__).parent
    names = re.compile(r"room_seen|legacy_receipt|mask-last-5|mask_stub|room_dedup|self\.notes|payload_receipts")
    assert [p.name for p in core.rglob("*.py") if names.search(p.read_text())] == []
