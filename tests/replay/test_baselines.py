"""The comparison-only gateway rules (the room-wide "already read" gate, receipts from
before `recall`) live in the replay package, not in production; the policy table holds
every policy, and a profile may choose only the ones it labels."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import observations.gateway
from observations.gateway.budget import Budget
from observations.gateway.context import SessionContext
from observations.gateway.policies import POLICIES, policy_named, profile_choices
from observations.gateway.rendering import shown_text
from observations.gateway.serving import Serving
from observations.gateway.transcript import ObsState
from observations.replay.eval.baselines import RoomDedup
from tests.gateway.factories import TOOLS, read_input
from tests.gateway.test_deadlock import CONFIG, agent_rereads_config


def comparison_context(**options) -> SessionContext:
    return SessionContext(model="test:model", system_prompt="You are a careful coding agent.", tools=TOOLS,
                          budget=Budget(window=128_000, output_budget=8_000), intent_text="Objective: fix it.",
                          intent_path=".atrium/tasks/1/intent.md", **options)


def test_eager_with_room_dedup_denies_every_reread():
    ctx = comparison_context(policy="eager", serving=Serving(notes=False, gate=RoomDedup()))
    answers = agent_rereads_config(ctx, attempts=5)
    first = ctx.observations[0]
    assert first.state is ObsState.RECEIPTED  # evicted by the eager rule
    assert all(CONFIG not in answer for answer in answers)
    assert all(answer.startswith("[already read]") for answer in answers)
    # Nothing anywhere in the request holds the text: the agent is stuck.
    assert not any(CONFIG in message.text for message in ctx.prepare().request.messages)


def test_masking_stubs_old_outputs_with_swe_agents_line():
    ctx = comparison_context(policy="mask-last-5")
    ctx.add_user("Read everything.", kind="task")
    for n in range(7):
        ctx.prepare()
        ctx.add_assistant(f"reading {n}", ())
        ctx.add_tool_result(read_input(f"c{n}", f"src/f{n}.py", "a\nb\nc\n"))
    ctx.prepare()
    assert shown_text(ctx, ctx.observations[0]) == "Old environment output: (4 lines omitted)"


def test_the_production_gateway_knows_no_comparison_only_rule():
    core = Path(observations.gateway.__file__).parent
    names = re.compile(r"room_seen|legacy_receipt|room_dedup|RoomDedup|\[already read\]")
    assert [p.name for p in core.rglob("*.py") if names.search(p.read_text())] == []


def test_a_profile_chooses_only_the_policies_the_table_labels():
    assert [name for name, _ in profile_choices()] == ["on_demand", "none", "eager"]
    assert POLICIES["mask-last-5"].label is None and policy_named("mask-last-5").name == "mask-last-5"
    with pytest.raises(ValueError, match="unknown eviction policy"):
        policy_named("sometimes")
