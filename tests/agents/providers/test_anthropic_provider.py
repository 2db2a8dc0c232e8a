"""`anthropic:` provider against a local server speaking the Messages protocol."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from agents.providers import (
    ContextOverflow,
    Rejected,
    RetryPolicy,
    anthropic_messages,
    provider_for,
)
from agents.providers.anthropic_messages import to_messages_params
from agents.providers.timeouts import Timeouts
from observations.gateway.messages import Message, Request, ToolCall
from tests.agents.providers.requests import first_request, reordered_pair, session_request
from tests.agents.providers.wire_server import load_fixture

MESSAGES = "/v1/messages"
KEY = "sk-ant-api03-test-0123456789"


def anthropic_for(wire, sleep):
    return provider_for(
        "anthropic:claude-sonnet-5",
        api_key=KEY,
        base_url=wire.url,
        env={},
        timeouts=Timeouts(connect=5, answer=5),
        sleep=sleep,
        rng=lambda: 0.5,
        policy=RetryPolicy(max_attempts=3, base_delay=0.5),
    )


def cache_marks(body):
    """Where cache_control sits: ("system"|"tools"|message index, block index)."""
    marks = [("system", i) for i, b in enumerate(body.get("system", [])) if "cache_control" in b]
    marks += [("tools", i) for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    for m, message in enumerate(body["messages"]):
        marks += [(m, b) for b, block in enumerate(message["content"]) if "cache_control" in block]
    return marks


def test_a_turn_with_tool_use_maps_text_calls_and_cache_aware_usage(wire, sleep):
    wire.reply(MESSAGES, json_body=load_fixture("anthropic_message_tool_use.json"))

    completion = anthropic_for(wire, sleep).call(session_request())

    turn, record = completion.turn, completion.record
    assert turn.text == "Let me run the tests to see the failure."
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        ("toolu_01_shell", "shell", {"command": "pytest -q"}),
        ("toolu_02_list", "list_files", {}),
    ]
    assert turn.stop_reason == "tool_use"
    # input_tokens is the whole input: uncached tail + cache reads + cache writes.
    assert turn.usage.input_tokens == 312 + 4096 + 1024
    assert turn.usage.cached_input_tokens == 4096
    assert turn.usage.cache_write_tokens == 1024
    assert turn.usage.output_tokens == 88
    assert (record.model, record.input_tokens, record.cached_input_tokens) == (
        "anthropic:claude-sonnet-5",
        5432,
        4096,
    )


def test_the_wire_request_merges_tool_results_and_keeps_roles_alternating(wire, sleep):
    wire.reply(MESSAGES, json_body=load_fixture("anthropic_message_tool_use.json"))

    anthropic_for(wire, sleep).call(session_request(max_tokens=3333))

    (sent,) = wire.requests_to(MESSAGES)
    body = sent.json
    assert KEY in (
        sent.headers.get("x-api-key"),
        sent.headers.get("authorization", "").removeprefix("Bearer "),
    )
    assert body["model"] == "claude-sonnet-5"
    assert body["max_tokens"] == 3333
    assert body["system"][0]["type"] == "text"
    assert body["system"][0]["text"] == "You are a careful coding agent."
    assert [t["name"] for t in body["tools"]] == ["read_file", "list_files"]
    assert body["tools"][0]["input_schema"]["required"] == ["path"]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assistant = body["messages"][1]["content"]
    assert [b["type"] for b in assistant] == ["text", "tool_use", "tool_use"]
    assert assistant[2]["input"] == {}  # an argument-less call sends {}, never null
    results = body["messages"][2]["content"]
    assert [b["type"] for b in results] == ["tool_result", "tool_result", "text"]
    assert [b.get("tool_use_id") for b in results[:2]] == ["call_a", "call_b"]
    assert results[0]["content"].startswith("def test_add()")
    assert results[2]["text"] == "Steer: keep the fix minimal."


def test_cache_breakpoints_mark_system_and_tools_the_stable_prefix_end_and_the_last_message(
    wire, sleep
):
    wire.reply(MESSAGES, json_body=load_fixture("anthropic_message_tool_use.json"))

    # Message 2 (the first tool result) ends the epoch's stable prefix.
    anthropic_for(wire, sleep).call(session_request(stable_prefix_end=2))

    body = wire.requests_to(MESSAGES)[0].json
    assert cache_marks(body) == [("system", 0), (2, 0), (2, 2)]
    assert len(cache_marks(body)) <= 4


def test_a_fold_request_marks_what_the_previous_request_sent_unchanged(wire, sleep):
    wire.reply(MESSAGES, json_body=load_fixture("anthropic_message_tool_use.json"))

    # The epoch starts at message 0; the fold kept messages 0-1 (the assistant turn)
    # byte for byte and replaced what followed with receipts.
    anthropic_for(wire, sleep).call(session_request(stable_prefix_end=0, reuse_prefix_end=1))

    body = wire.requests_to(MESSAGES)[0].json
    # system+tools, the stable prefix end, the reuse point (the assistant turn's last
    # block), the last message: the API's four.
    assert cache_marks(body) == [("system", 0), (0, 0), (1, 2), (2, 2)]


@pytest.mark.parametrize(
    ("stable", "reuse", "marks"),
    [
        pytest.param(2, 2, [("system", 0), (2, 0), (2, 2)], id="reuse-is-the-stable-end"),
        pytest.param(0, 4, [("system", 0), (0, 0), (2, 2)], id="reuse-is-the-last-message"),
        pytest.param(-1, 0, [("system", 0), (0, 0), (2, 2)], id="no-stable-end"),
        pytest.param(0, 9, [("system", 0), (0, 0), (2, 2)], id="reuse-out-of-range"),
        pytest.param(4, 4, [("system", 0), (2, 2)], id="all-at-the-last-message"),
    ],
)
def test_breakpoints_on_the_same_block_merge(stable, reuse, marks):
    request = session_request(stable_prefix_end=stable, reuse_prefix_end=reuse)

    assert cache_marks(to_messages_params(request, model="m")) == marks


@pytest.mark.parametrize(
    ("budget", "marks"),
    [
        (3, [("system", 0), (1, 2), (2, 2)]),  # the stable end goes first
        (2, [("system", 0), (2, 2)]),  # then the reuse point
        (1, [("system", 0)]),  # system+tools goes last
    ],
)
def test_with_fewer_breakpoints_allowed_the_least_useful_are_dropped(monkeypatch, budget, marks):
    monkeypatch.setattr(anthropic_messages, "MAX_CACHE_BREAKPOINTS", budget)
    request = session_request(stable_prefix_end=0, reuse_prefix_end=1)

    assert cache_marks(to_messages_params(request, model="m")) == marks


def test_without_system_or_tools_all_three_message_breakpoints_fit():
    request = replace(session_request(stable_prefix_end=0, reuse_prefix_end=1), system="", tools=())

    assert cache_marks(to_messages_params(request, model="m")) == [(0, 0), (1, 2), (2, 2)]


def test_breakpoints_collapse_when_the_prefix_ends_at_the_last_message():
    request = session_request(stable_prefix_end=4)

    body = to_messages_params(request, model="m")

    assert cache_marks(body) == [("system", 0), (2, 2)]


def test_without_a_system_prompt_the_last_tool_carries_the_prefix_breakpoint():
    request = Request(
        model="m",
        system="",
        tools=session_request().tools,
        messages=(Message("user", "hi"),),
        max_tokens=10,
    )

    body = to_messages_params(request, model="m")

    assert "system" not in body
    assert cache_marks(body) == [("tools", 1), (0, 0)]


def test_empty_texts_never_become_empty_text_blocks():
    request = Request(
        model="m",
        system="s",
        tools=(),
        messages=(
            Message("user", ""),
            Message("assistant", ""),
            Message("user", "next"),
            Message("assistant", "", tool_calls=(ToolCall("c1", "list_files", {}),)),
            Message("tool", "", tool_call_id="c1", tool_name="list_files"),
        ),
        max_tokens=10,
    )

    body = to_messages_params(request, model="m")

    texts = [b["text"] for m in body["messages"] for b in m["content"] if b["type"] == "text"]
    assert all(texts)
    assert body["messages"][3]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "list_files", "input": {}}
    ]
    assert body["messages"][4]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "c1",
        "cache_control": {"type": "ephemeral"},
    }


def test_tool_inputs_differing_only_in_key_order_go_out_as_identical_bytes(wire, sleep):
    for _ in range(2):
        wire.reply(MESSAGES, json_body=load_fixture("anthropic_message_text.json"))
    provider = anthropic_for(wire, sleep)

    for request in reordered_pair():
        provider.complete(request)

    first, second = wire.requests_to(MESSAGES)
    assert first.raw == second.raw
    (tool_use,) = first.json["messages"][1]["content"]
    assert json.dumps(tool_use["input"]) == (
        '{"dry_run": false, "edits": [{"at": {"column": 11, "line": 2}, '
        '"new": "a + b", "old": "a - b"}], "path": "src/app.py"}'
    )


def test_overloaded_529_is_retried_then_the_turn_arrives(wire, sleep):
    wire.reply(
        MESSAGES,
        status=529,
        json_body={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    wire.reply(MESSAGES, json_body=load_fixture("anthropic_message_text.json"))

    turn = anthropic_for(wire, sleep).complete(first_request())

    assert turn.text == "All tests pass; verify can run."
    assert turn.stop_reason == "end_turn"
    assert sleep.delays == [0.375]
    assert len(wire.requests_to(MESSAGES)) == 2


def test_retry_after_ms_is_honoured(wire, sleep):
    wire.reply(
        MESSAGES,
        status=429,
        headers={"retry-after-ms": "1500"},
        json_body={
            "type": "error",
            "error": {
                "type": "rate_limit_error",
                "message": "Number of request tokens has exceeded your per-minute rate limit",
            },
        },
    )
    wire.reply(MESSAGES, json_body=load_fixture("anthropic_message_text.json"))

    anthropic_for(wire, sleep).complete(first_request())

    assert sleep.delays == [1.5]


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id=c["name"])
        for c in load_fixture("error_bodies.json")["cases"]
        if c["overflow"]
        and c["status"] is not None
        and c["provider"] in ("anthropic", "github-copilot", "cliproxyapi")
    ],
)
def test_overflow_bodies_raise_context_overflow_and_are_never_retried(wire, sleep, case):
    wire.reply(MESSAGES, status=case["status"], text=case["body"])

    with pytest.raises(ContextOverflow) as caught:
        anthropic_for(wire, sleep).call(session_request())

    assert len(wire.requests_to(MESSAGES)) == 1
    assert sleep.delays == []
    assert caught.value.reason
    assert caught.value.record.error_kind == "context_overflow"


def test_max_tokens_above_the_model_limit_is_rejected_not_mistaken_for_overflow(wire, sleep):
    case = next(
        c
        for c in load_fixture("error_bodies.json")["cases"]
        if c["name"] == "anthropic_max_tokens_above_model_limit"
    )
    wire.reply(MESSAGES, status=case["status"], text=case["body"])

    with pytest.raises(Rejected) as caught:
        anthropic_for(wire, sleep).call(first_request())

    assert not isinstance(caught.value, ContextOverflow)
    assert "maximum allowed number of output tokens" in str(caught.value)


def test_a_bad_key_is_rejected_without_the_key_in_any_message(wire, sleep):
    wire.reply(
        MESSAGES,
        status=401,
        json_body={
            "type": "error",
            "error": {"type": "authentication_error", "message": f"invalid x-api-key {KEY}"},
        },
    )

    with pytest.raises(Rejected) as caught:
        anthropic_for(wire, sleep).call(first_request())

    assert "invalid x-api-key" in str(caught.value)
    assert KEY not in str(caught.value)
    assert KEY not in json.dumps(caught.value.record.to_dict())
    assert len(wire.requests_to(MESSAGES)) == 1
