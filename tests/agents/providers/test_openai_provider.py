"""`openai:` provider against a local server speaking the Chat Completions protocol."""

from __future__ import annotations

import pytest

from agents.providers import (
    MALFORMED_ARGUMENTS_KEY,
    RetryPolicy,
    provider_for,
)
from agents.providers.openai_chat import OpenAIProvider
from agents.providers.timeouts import Timeouts
from observations.gateway.messages import Message, Request, ToolCall
from tests.agents.providers.requests import first_request, reordered_pair, session_request
from tests.agents.providers.wire_server import load_fixture

CHAT = "/v1/chat/completions"
KEY = "sk-test-0123456789abcdef"


def openai_for(wire, sleep, **kwargs):
    kwargs.setdefault("policy", RetryPolicy(max_attempts=3, base_delay=0.5, max_delay=4.0))
    return provider_for(
        "openai:gpt-4.1",
        api_key=KEY,
        base_url=f"{wire.url}/v1",
        env={},
        timeouts=Timeouts(connect=5, answer=5),
        sleep=sleep,
        rng=lambda: 0.5,
        **kwargs,
    )


def overflow_cases(*providers):
    cases = load_fixture("error_bodies.json")["cases"]
    return [
        pytest.param(c, id=c["name"])
        for c in cases
        if c["overflow"] and c["provider"] in providers and c["status"] is not None
    ]


def test_a_turn_with_tool_calls_maps_text_calls_usage_and_stop_reason(wire, sleep):
    wire.reply(CHAT, json_body=load_fixture("openai_chat_tool_calls.json"))

    completion = openai_for(wire, sleep).call(session_request())

    turn, record = completion.turn, completion.record
    assert turn.text == "I'll read the failing test and list the package first."
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        ("call_read_0001", "read_file", {"path": "tests/test_calc.py", "start": 1, "end": 40}),
        ("call_list_0002", "list_files", {}),
    ]
    assert turn.stop_reason == "tool_use"
    assert turn.model == "gpt-4.1-2025-04-14"
    assert (turn.usage.input_tokens, turn.usage.cached_input_tokens) == (2048, 1536)
    assert (turn.usage.output_tokens, turn.usage.reasoning_tokens) == (310, 192)
    assert record.model == "openai:gpt-4.1"
    assert (record.input_tokens, record.cached_input_tokens, record.reasoning_tokens) == (
        2048,
        1536,
        192,
    )
    assert record.usage_reported and record.attempts == 1 and record.error is None
    assert len(record.prefix_hash) == 64


def test_the_wire_request_uses_chat_format_for_tool_calls_and_results(wire, sleep):
    wire.reply(CHAT, json_body=load_fixture("openai_chat_tool_calls.json"))

    openai_for(wire, sleep).call(session_request(max_tokens=2222))

    (sent,) = wire.requests_to(CHAT)
    body = sent.json
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert body["model"] == "gpt-4.1"
    assert body["max_tokens"] == 2222  # compatible servers know max_tokens
    assert [m["role"] for m in body["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
    ]
    assistant = body["messages"][2]
    assert assistant["content"] == "Reading the test and listing files."
    assert assistant["tool_calls"] == [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "tests/test_calc.py"}'},
        },
        {"id": "call_b", "type": "function", "function": {"name": "list_files", "arguments": "{}"}},
    ]
    assert body["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_a",
        "content": "def test_add():\n    assert add(2, 2) == 4\n",
    }
    assert body["messages"][4]["tool_call_id"] == "call_b"
    assert body["tools"][0]["type"] == "function"
    assert body["tools"][0]["function"]["name"] == "read_file"
    assert body["tools"][0]["function"]["parameters"]["required"] == ["path"]


def test_openai_itself_gets_max_completion_tokens():
    assert OpenAIProvider("o4-mini", api_key="k").token_limit_field == "max_completion_tokens"
    assert (
        OpenAIProvider("qwen", api_key="k", base_url="http://vllm:8000/v1").token_limit_field
        == "max_tokens"
    )


def test_deepseek_cache_hits_outside_prompt_details_count_as_cached(wire, sleep):
    wire.reply(CHAT, json_body=load_fixture("deepseek_chat_text.json"))

    turn = openai_for(wire, sleep).complete(first_request())

    assert turn.usage.input_tokens == 1800
    assert turn.usage.cached_input_tokens == 1280
    assert turn.stop_reason == "end_turn"
    assert turn.tool_calls == ()


def test_a_server_without_call_ids_or_with_broken_arguments_still_yields_usable_calls(wire, sleep):
    body = load_fixture("openai_chat_tool_calls.json")
    calls = body["choices"][0]["message"]["tool_calls"]
    calls[0]["id"] = ""
    calls[1]["function"]["arguments"] = '{"path": "calc.py"'  # cut off mid-object
    body["choices"][0]["finish_reason"] = "stop"  # as some local servers answer
    wire.reply(CHAT, json_body=body)
    wire.reply(CHAT, json_body=body)
    provider = openai_for(wire, sleep)

    first = provider.complete(first_request())
    again = provider.complete(first_request())

    assert first.tool_calls[0].id.startswith("call_")
    assert first.tool_calls[0].id == again.tool_calls[0].id  # same request, same id
    assert first.tool_calls[1].arguments == {MALFORMED_ARGUMENTS_KEY: '{"path": "calc.py"'}
    assert first.stop_reason == "tool_use"


def test_malformed_arguments_go_back_to_the_server_exactly_as_the_model_wrote_them(wire, sleep):
    wire.reply(CHAT, json_body=load_fixture("deepseek_chat_text.json"))
    request = Request(
        model="any",
        system="",
        tools=(),
        messages=(
            Message("user", "go"),
            Message(
                "assistant",
                "",
                tool_calls=(ToolCall("c1", "shell", {MALFORMED_ARGUMENTS_KEY: '{"cmd": '}),),
            ),
            Message(
                "tool", "error: arguments are not valid JSON", tool_call_id="c1", tool_name="shell"
            ),
        ),
        max_tokens=64,
    )

    openai_for(wire, sleep).complete(request)

    sent = wire.requests_to(CHAT)[0].json
    assert sent["messages"][0]["role"] == "user"  # no system message when there is no system text
    assert sent["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"cmd": '
    assert "tools" not in sent


def test_arguments_differing_only_in_key_order_go_out_as_identical_bytes(wire, sleep):
    for _ in range(2):
        wire.reply(CHAT, json_body=load_fixture("deepseek_chat_text.json"))
    provider = openai_for(wire, sleep)

    for request in reordered_pair():
        provider.complete(request)

    first, second = wire.requests_to(CHAT)
    assert first.raw == second.raw
    arguments = first.json["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert arguments == (
        '{"dry_run": false, "edits": [{"at": {"column": 11, "line": 2}, '
        '"new": "a + b", "old": "a - b"}], "path": "src/app.py"}'
    )


