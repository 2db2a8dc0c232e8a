"""The fixed-prefix breakdown of a request: named parts that cover the whole request."""

from __future__ import annotations

from observations.gateway import breakdown
from observations.gateway.breakdown import breakdown_total, request_breakdown
from observations.gateway.tokens import estimate_tokens
from tests.gateway.factories import call, file_text, make_context, read_input


def _session():
    ctx = make_context(window=60_000)
    ctx.add_user("Task: fix it. Begin.", kind="task")
    ctx.add_assistant("Reading.", (call("c1", path="a.py"),))
    ctx.add_tool_result(read_input("c1", "a.py", file_text("a.py", 0, 40)))
    ctx.refresh_intent("Objective: fix the bug.\nConstraints: don't touch vendor/ or docs/.")
    return ctx


def test_the_parts_cover_the_whole_request_as_a_provider_receives_it():
    ctx = _session()
    parts = request_breakdown(ctx)
    assert list(parts) == ["system", "tools", "conversation", "intent"]
    tools_wire = sum(estimate_tokens(breakdown.tool_wire(t)) for t in ctx.tools)
    messages = sum(ctx.transcript.tokens)
    assert breakdown_total(parts) == estimate_tokens(ctx.system_prompt) + tools_wire + messages
    assert parts["tools"]["tokens"] == tools_wire
    assert set(parts["tools"]["each"]) == {t.name for t in ctx.tools}
    assert parts["tools"]["bytes"] == sum(len(breakdown.tool_wire(t).encode()) for t in ctx.tools)


def test_the_intent_block_and_its_updates_are_one_part_and_the_rest_is_conversation():
    ctx = _session()
    parts = request_breakdown(ctx)
    intent_entries = [i for i, e in enumerate(ctx.entries) if e.kind in ("intent", "intent_update")]
    assert len(intent_entries) == 2
    assert parts["intent"]["tokens"] == sum(ctx.transcript.tokens[i] for i in intent_entries)
    assert parts["conversation"]["tokens"] == sum(
        t for i, t in enumerate(ctx.transcript.tokens) if i not in intent_entries)
    assert parts["intent"]["bytes"] == sum(len(ctx.entries[i].text.encode()) for i in intent_entries)


def test_a_new_kind_of_pinned_entry_becomes_its_own_part(monkeypatch):
    monkeypatch.setitem(breakdown.PART_OF_KIND, "handoff", "handoff")
    ctx = _session()
    ctx.add_user("## Handoff\nTask: fix it. Next step: run the tests.", kind="handoff", pinned=True)
    parts = request_breakdown(ctx)
    assert parts["handoff"]["tokens"] == ctx.transcript.tokens[-1]
    assert "handoff" in breakdown.FIXED_PARTS
