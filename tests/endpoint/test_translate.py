"""Translation between a client's format and the gateway's neutral shapes
(endpoint/formats), plain Python:
what each format's history becomes, what a turn becomes, and what is refused."""

from __future__ import annotations

import json

import pytest

from agents.providers.toolcalls import MALFORMED_ARGUMENTS_KEY
from endpoint.formats import FORMATS
from endpoint.wire import WireError
from observations.gateway.messages import Message, ModelTurn, ToolCall, ToolSchema, Usage


def test_an_openai_history_becomes_neutral_messages_with_the_tool_names_found():
    request = FORMATS["openai"].request({"model": "x", "max_tokens": 50, "messages": [
        {"role": "system", "content": "Rule one."},
        {"role": "developer", "content": [{"type": "text", "text": "Rule two."}]},
        {"role": "user", "content": [{"type": "text", "text": "fix "}, {"type": "text", "text": "it"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "run", "arguments": "not json"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "text"},
        {"role": "tool", "tool_call_id": "c2", "content": "out"},
    ], "tools": [{"type": "function", "function": {"name": "read"}}]}, model="claude")
    assert request.model == "claude" and request.max_tokens == 50
    assert request.system == "Rule one.\n\nRule two."
    assert request.tools == (ToolSchema("read", "", {"type": "object", "properties": {}}),)
    assert request.messages == (
        Message("user", "fix it"),
        Message("assistant", "", tool_calls=(ToolCall("c1", "read", {"path": "a"}),
                                             ToolCall("c2", "run", {MALFORMED_ARGUMENTS_KEY: "not json"}))),
        Message("tool", "text", tool_call_id="c1", tool_name="read"),
        Message("tool", "out", tool_call_id="c2", tool_name="run"),
    )


def test_an_anthropic_history_becomes_neutral_messages_tool_results_first():
    request = FORMATS["anthropic"].request({"model": "x", "max_tokens": 9, "system": [{"type": "text", "text": "S"}],
                                         "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"p": 1}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "body"}]},
            {"type": "tool_result", "tool_use_id": "t9", "content": "no such call", "is_error": True},
            {"type": "text", "text": "then stop"}]},
    ]}, model="gpt")
    assert request.system == "S" and request.max_tokens == 9
    assert request.messages == (
        Message("user", "go"),
        Message("assistant", "", tool_calls=(ToolCall("t1", "read", {"p": 1}),)),
        Message("tool", "body", tool_call_id="t1", tool_name="read"),
        Message("tool", "Error: no such call", tool_call_id="t9", tool_name=None),
        Message("user", "then stop"),
    )


def test_claude_codes_history_system_messages_inside_text_blocks_apart_and_thinking_kept_as_given():
    request = FORMATS["anthropic"].request({"model": "x", "max_tokens": 64_000, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "<system-reminder>date</system-reminder>"},
                                     {"type": "text", "text": "Fix calc.py"}]},
        {"role": "system", "content": "Agent types: Explore."},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "sig"},
                                          {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]},
        # Among a call and its result, it waits for the result: tool results follow their call.
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "calc.py"}]},
    ]}, model="gpt")
    assert request.messages == (
        Message("user", "<system-reminder>date</system-reminder>\n\nFix calc.py"),
        Message("user", "<system-reminder>\nAgent types: Explore.\n</system-reminder>"),
        Message("assistant", "", tool_calls=(ToolCall("t1", "Bash", {"command": "ls"}),),
                thinking=('{"type": "thinking", "thinking": "hm", "signature": "sig"}',)),
        Message("tool", "calc.py", tool_call_id="t1", tool_name="Bash"),
        Message("user", "<system-reminder>\nBe brief.\n</system-reminder>"),
    )


def test_an_empty_system_message_adds_nothing_and_a_tools_description_must_be_text():
    request = FORMATS["anthropic"].request({"model": "x", "max_tokens": 5, "messages": [
        {"role": "user", "content": "go"}, {"role": "system", "content": []}, {"role": "system", "content": " "}]},
        model="m")
    assert request.messages == (Message("user", "go"),)
    with pytest.raises(WireError) as caught:
        FORMATS["anthropic"].check({"model": "x", "max_tokens": 5, "messages": [{"role": "user", "content": "go"}],
                                    "tools": [{"name": "t", "description": 5, "input_schema": {"type": "object"}}]})
    assert caught.value.param == "tools.0.description"


@pytest.mark.parametrize(("fmt", "body", "param"), [
    ("openai", {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
     "messages[0].content[0]"),
    ("anthropic", {"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "document"}]}]},
     "messages.0.content.0"),
    ("anthropic", {"max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
                   "tools": [{"type": "web_search_20250305", "name": "web"}]}, "tools.0"),
])
def test_what_the_neutral_shapes_cannot_hold_is_refused_naming_the_part(fmt, body, param):
    with pytest.raises(WireError) as caught:
        FORMATS[fmt].request({"model": "x", **body}, model="m")
    assert caught.value.param == param and caught.value.status == 400


TURN = ModelTurn(text="Reading.", tool_calls=(ToolCall("c1", "read", {"path": "a"}),),
                 usage=Usage(input_tokens=100, cached_input_tokens=60, cache_write_tokens=10, output_tokens=7),
                 model="up-model", stop_reason="tool_use")


def test_a_turn_becomes_each_formats_response_with_usage_counted_its_way():
    openai_body = FORMATS["openai"].response(TURN, model="m")
    assert openai_body["choices"][0]["finish_reason"] == "tool_calls"
    assert openai_body["choices"][0]["message"]["tool_calls"][0]["function"] == {"name": "read",
                                                                                 "arguments": '{"path": "a"}'}
    assert openai_body["usage"]["prompt_tokens"] == 100
    anthropic_body = FORMATS["anthropic"].response(TURN, model="m")
    assert anthropic_body["content"] == [{"type": "text", "text": "Reading."},
                                         {"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "a"}}]
    assert anthropic_body["usage"] == {"input_tokens": 30, "cache_read_input_tokens": 60,
                                       "cache_creation_input_tokens": 10, "output_tokens": 7}
    plain = ModelTurn(text="done", stop_reason="max_tokens")
    assert FORMATS["openai"].response(plain, model="m")["choices"][0]["finish_reason"] == "length"
    assert FORMATS["anthropic"].response(plain, model="m")["stop_reason"] == "max_tokens"


def test_a_turns_stream_is_the_event_sequence_each_sdk_expects():
    names = [e.decode().split("\n", 1)[0].removeprefix("event: ") for e in FORMATS["anthropic"].stream(TURN, model="m")]
    assert names == ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
                     "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
                     "message_stop"]
    chunks = FORMATS["openai"].stream(TURN, model="m", body={"stream_options": {"include_usage": True}})
    assert chunks[-1] == b"data: [DONE]\n\n"
    payloads = [json.loads(c.decode()[len("data: "):]) for c in chunks[:-1]]
    assert all(p["object"] == "chat.completion.chunk" for p in payloads)
    assert payloads[-1]["choices"] == [] and payloads[-1]["usage"]["completion_tokens"] == 7
    # As OpenAI streams: the usage chunk only when the client asked for it.
    unasked = [json.loads(c.decode()[len("data: "):]) for c in FORMATS["openai"].stream(TURN, model="m")[:-1]]
    assert all(p["choices"] for p in unasked) and unasked[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_the_stop_sequence_that_ended_a_turn_reaches_an_anthropic_client():
    stopped = ModelTurn("Thought: read it", stop_reason="end_turn", stop_sequence="\nObservation:")
    body = FORMATS["anthropic"].response(stopped, model="m")
    assert (body["stop_reason"], body["stop_sequence"]) == ("stop_sequence", "\nObservation:")
    delta = [e for e in FORMATS["anthropic"].stream(stopped, model="m") if e.startswith(b"event: message_delta")][0]
    assert b'"stop_reason": "stop_sequence", "stop_sequence": "\\nObservation:"' in delta
    assert FORMATS["openai"].response(stopped, model="m")["choices"][0]["finish_reason"] == "stop"


def test_every_call_of_a_responses_stream_is_done_with_its_arguments_and_the_output_is_the_items_streamed():
    turn = ModelTurn("Both.", tool_calls=(ToolCall("c1", "read", {"path": "a"}), ToolCall("c2", "read", {"path": "b"})))
    events = [json.loads(e.decode().split("data: ", 1)[1]) for e in FORMATS["responses"].stream(turn, model="m")]
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [json.loads(item["arguments"]) for item in done if item["type"] == "function_call"] == \
        [{"path": "a"}, {"path": "b"}]
    assert [e["arguments"] for e in events if e["type"] == "response.function_call_arguments.done"] == \
        [item["arguments"] for item in done[1:]]
    assert events[-1]["response"]["output"] == done
    assert [e["item"]["id"] for e in events if e["type"] == "response.output_item.added"] == [i["id"] for i in done]


def test_an_anthropic_clients_answer_holds_the_turns_thinking_first_whole_and_streamed():
    signed = {"type": "thinking", "thinking": "Check the divisor.", "signature": "EqQBsig"}
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgB"}
    turn = ModelTurn("Guarding it.", thinking=(json.dumps(signed), json.dumps(redacted)))
    assert FORMATS["anthropic"].response(turn, model="m")["content"] == [signed, redacted,
                                                                          {"type": "text", "text": "Guarding it."}]
    events = [json.loads(e.decode().split("data: ", 1)[1]) for e in FORMATS["anthropic"].stream(turn, model="m")]
    starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert starts == [{"type": "thinking", "thinking": "", "signature": ""}, redacted, {"type": "text", "text": ""}]
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta" and e["index"] == 0]
    assert deltas == [{"type": "thinking_delta", "thinking": "Check the divisor."},
                      {"type": "signature_delta", "signature": "EqQBsig"}]
    # A client of another format sees the text only.
    assert "Check the divisor" not in b"".join(FORMATS["openai"].stream(turn, model="m")).decode()
    assert "Check the divisor" not in json.dumps(FORMATS["responses"].response(turn, model="m"))
