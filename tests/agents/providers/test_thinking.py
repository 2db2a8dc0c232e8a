"""Thinking blocks through the providers: an Anthropic answer's blocks kept on the turn
as the API gave them and sent back first in their message, byte for byte; an OpenAI
upstream gets none; a thinking budget the step's output limit cannot hold is lowered."""

from __future__ import annotations

import dataclasses
import json

from agents.providers.anthropic_messages import to_messages_params
from agents.providers.openai_chat import to_chat_params
from agents.providers.output_limits import reasons
from endpoint.feed import observation_input
from observations.gateway.budget import Budget
from observations.gateway.context import SessionContext
from observations.gateway.handoff import SECTIONS, Handoff
from observations.gateway.messages import Message, Params, Request, ToolCall
from observations.gateway.segments import start_segment
from tests.agents.providers.requests import first_request
from tests.agents.providers.test_anthropic_provider import anthropic_for

SIGNED = {"type": "thinking", "thinking": "The test divides by zero: guard it.", "signature": "EqQBCkgIBxAB" + "s" * 80}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a" + "d" * 40}


def answered(wire) -> None:
    wire.reply("/v1/messages", json_body={
        "id": "msg_t", "type": "message", "role": "assistant", "model": "claude-sonnet-5", "stop_reason": "tool_use",
        "stop_sequence": None, "usage": {"input_tokens": 30, "output_tokens": 50},
        "content": [SIGNED, REDACTED, {"type": "text", "text": "Guarding it."},
                    {"type": "tool_use", "id": "toolu_t", "name": "read_file", "input": {"path": "calc.py"}}]})


def test_an_anthropic_answers_thinking_is_kept_and_goes_back_first_in_its_message_as_it_came(wire, sleep):
    answered(wire)
    turn = anthropic_for(wire, sleep).call(first_request()).turn
    assert [json.loads(block) for block in turn.thinking] == [SIGNED, REDACTED]
    assert turn.text == "Guarding it."

    again = dataclasses.replace(first_request(), messages=(
        *first_request().messages, Message("assistant", turn.text, tool_calls=turn.tool_calls, thinking=turn.thinking),
        Message("tool", "def div(a, b): return a / b", tool_call_id="toolu_t", tool_name="read_file")))
    wire_messages = to_messages_params(again, model="claude-sonnet-5")["messages"]
    assert wire_messages[1]["content"][:2] == [SIGNED, REDACTED]
    assert [b["type"] for b in wire_messages[1]["content"][2:]] == ["text", "tool_use"]
    chat = to_chat_params(again, model="gpt-4.1", token_limit_field="max_tokens")["messages"]
    assert "thinking" not in json.dumps(chat)  # an OpenAI upstream has no such blocks


def test_a_thinking_budget_is_kept_below_the_output_limit_the_step_sends():
    def sent(budget: int, max_tokens: int) -> dict | None:
        request = Request(model="any", system="", tools=(), messages=(Message("user", "go"),), max_tokens=max_tokens,
                          params=Params(native={"anthropic": {"thinking": {"type": "enabled",
                                                                           "budget_tokens": budget}}}))
        return to_messages_params(request, model="claude-sonnet-5").get("extra_body", {}).get("thinking")

    assert sent(10_000, 32_000) == {"type": "enabled", "budget_tokens": 10_000}
    assert sent(31_999, 16_000) == {"type": "enabled", "budget_tokens": 8_000}  # half for the answer
    assert sent(2_000, 1_800) is None  # half of 1,800 is under the least budget: no thinking
    assert reasons("o4-mini") and reasons("openai:gpt-5.1") and not reasons("gpt-5-chat-latest") \
        and not reasons("o1-mini") and not reasons("gpt-4.1")


def test_thinking_stays_first_and_never_takes_a_cache_mark():
    thought = Message("assistant", "", thinking=(json.dumps(SIGNED),))
    merged = Request(model="any", system="", tools=(), messages=(
        Message("user", "go"), Message("assistant", "First."), thought), max_tokens=100)
    wire = to_messages_params(merged, model="claude-sonnet-5")["messages"]
    assert [b["type"] for b in wire[1]["content"]] == ["thinking", "text", "text"]
    assert wire[1]["content"][0] == SIGNED  # its bytes as given, and no cache mark on it
    assert wire[1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


def test_a_new_segment_carries_the_last_answers_thinking():
    ctx = SessionContext(model="anthropic:claude-sonnet-5", system_prompt="You fix bugs.", tools=(),
                         budget=Budget(window=128_000, output_budget=4_000))
    ctx.add_user("Fix calc.py", kind="user")
    call = ToolCall("toolu_1", "read_file", {"path": "calc.py"})
    ctx.add_assistant("", (call,), thinking=(json.dumps(SIGNED),))
    ctx.add_tool_result(observation_input(call, "def div(a, b): return a / b\n"))
    handoff = Handoff(segment=ctx.segment + 1, reason="test", sections=dict.fromkeys(SECTIONS, "-"),
                      prose_source="records")
    start_segment(ctx, handoff)
    sent = to_messages_params(ctx.prepare().request, model="claude-sonnet-5")["messages"]
    answers = [m["content"] for m in sent if m["role"] == "assistant"]
    assert answers[-1][0] == SIGNED and answers[-1][-1]["type"] == "tool_use"
