"""The official SDKs, pointed at the hub under a real Daphne with its gateway sessions
off (pass-through, ``ATRIUM_GATEWAY_SESSIONS``), get what the upstream
(the local wire-protocol server) answered: streamed and not, with tool calls, and its
rate limits and 5xx with their retry headers. The client's gateway key never goes
upstream; the profile's model and key do."""

from __future__ import annotations

import json
import time

import anthropic
import openai
import pytest
from django.conf import settings

from tests.agents.providers.wire_server import load_fixture
from tests.endpoint.conftest import (
    UPSTREAM_KEY,
    anthropic_tool_use_stream,
    openai_tool_call_stream,
)

pytestmark = pytest.mark.timeout(120)

TOOLS_OPENAI = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                                  "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
TOOLS_ANTHROPIC = [{"name": "shell", "description": "Run a command.",
                    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]


def test_the_openai_sdk_lists_the_model_and_calls_tools_streamed_and_not(setup, wire, relay_hub):
    client = openai.OpenAI(base_url=relay_hub.url + "/v1", api_key=setup.openai_key, max_retries=0)
    assert [m.id for m in client.models.list()] == ["gpt-4.1"]

    wire.reply("/v1/chat/completions", json_body=load_fixture("openai_chat_tool_calls.json"),
               headers={"x-request-id": "req_upstream_1"})
    raw = client.chat.completions.with_raw_response.create(
        model="whatever-the-client-says", messages=[{"role": "user", "content": "fix it"}], tools=TOOLS_OPENAI)
    completion = raw.parse()
    assert raw.headers["x-request-id"] == "req_upstream_1"
    assert [(c.id, c.function.name) for c in completion.choices[0].message.tool_calls] == [
        ("call_read_0001", "read_file"), ("call_list_0002", "list_files")]
    assert completion.usage.prompt_tokens_details.cached_tokens == 1536

    sent = wire.requests_to("/v1/chat/completions")[-1]
    assert sent.json["model"] == "gpt-4.1"  # the profile's, not the client's
    assert sent.json["tools"] == TOOLS_OPENAI
    assert sent.json["messages"] == [{"role": "user", "content": "fix it"}]  # in the SDK's place, left empty
    assert sent.headers["authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert setup.openai_key not in sent.raw.decode() + json.dumps(sent.headers)

    wire.reply("/v1/chat/completions", text=openai_tool_call_stream(), headers={"Content-Type": "text/event-stream"})
    chunks = list(client.chat.completions.create(
        model="gpt-4.1", messages=[{"role": "user", "content": "fix it"}], tools=TOOLS_OPENAI, stream=True,
        stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    arguments = "".join(tc.function.arguments or "" for c in chunks if c.choices
                        for tc in c.choices[0].delta.tool_calls or ())
    assert text == "Reading the test."
    assert json.loads(arguments) == {"path": "a.py"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].usage.total_tokens == 15
    assert wire.requests_to("/v1/chat/completions")[-1].json["stream"] is True


def test_the_anthropic_sdk_calls_tools_streamed_and_not(setup, wire, relay_hub):
    client = anthropic.Anthropic(base_url=relay_hub.url, api_key=setup.anthropic_key, max_retries=0)
    assert [m.id for m in client.models.list()] == ["claude-sonnet-5"]

    wire.reply("/v1/messages", json_body=load_fixture("anthropic_message_tool_use.json"))
    message = client.messages.create(model="claude-whatever", max_tokens=1000, tools=TOOLS_ANTHROPIC,
                                     messages=[{"role": "user", "content": "run the tests"}],
                                     extra_headers={"anthropic-beta": "some-beta-2026"})
    assert [(b.type, getattr(b, "name", None)) for b in message.content] == [
        ("text", None), ("tool_use", "shell"), ("tool_use", "list_files")]
    assert message.usage.cache_read_input_tokens == 4096
    sent = wire.requests_to("/v1/messages")[-1]
    assert (sent.json["model"], sent.json["max_tokens"], sent.json["tools"]) == (
        "claude-sonnet-5", 1000, TOOLS_ANTHROPIC)
    assert sent.json["messages"] == [{"role": "user", "content": "run the tests"}]
    # The key as this SDK sends it: x-api-key or, in newer SDKs, a Bearer token.
    assert UPSTREAM_KEY in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "")[len("Bearer "):])
    assert sent.headers["anthropic-beta"] == "some-beta-2026"
    assert setup.anthropic_key not in sent.raw.decode() + json.dumps(sent.headers)

    wire.reply("/v1/messages", text=anthropic_tool_use_stream(), headers={"Content-Type": "text/event-stream"})
    with client.messages.stream(model="claude-sonnet-5", max_tokens=1000, tools=TOOLS_ANTHROPIC,
                                messages=[{"role": "user", "content": "run the tests"}]) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == "Running the tests."
    assert (final.content[1].name, final.content[1].input) == ("shell", {"command": "pytest -q"})
    assert final.stop_reason == "tool_use"


def test_rate_limits_and_upstream_errors_pass_through_with_their_retry_headers(setup, wire, relay_hub):
    client = openai.OpenAI(base_url=relay_hub.url + "/v1", api_key=setup.openai_key, max_retries=0)
    wire.reply("/v1/chat/completions", status=429,
               json_body={"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}},
               headers={"retry-after": "7", "x-ratelimit-remaining-requests": "0"})
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.response.headers["retry-after"] == "7"
    assert caught.value.response.headers["x-ratelimit-remaining-requests"] == "0"
    assert caught.value.code == "rate_limit_exceeded"

    claude = anthropic.Anthropic(base_url=relay_hub.url, api_key=setup.anthropic_key, max_retries=0)
    wire.reply("/v1/messages", status=529, json_body={"type": "error", "error": {"type": "overloaded_error",
                                                                                 "message": "Overloaded"}},
               headers={"retry-after": "3"})
    with pytest.raises(anthropic.APIStatusError) as overloaded:
        claude.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert overloaded.value.status_code == 529
    assert overloaded.value.response.headers["retry-after"] == "3"
    assert overloaded.value.body["error"]["type"] == "overloaded_error"

    # The profile's own key refused upstream is not the client's key refused: a 502.
    wire.reply("/v1/messages", status=401, json_body={"type": "error", "error": {"type": "authentication_error",
                                                                                 "message": "invalid x-api-key"}})
    with pytest.raises(anthropic.InternalServerError) as refused:
        claude.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert refused.value.status_code == 502
    assert "agent's own key" in refused.value.message

    # A stream that fails upstream before it starts is an error status, not a stream.
    wire.reply("/v1/chat/completions", status=503, text='{"error": {"message": "down", "type": "server_error"}}')
    with pytest.raises(openai.InternalServerError) as down:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True)
    assert down.value.status_code == 503


def test_an_openai_client_reaches_an_anthropic_agent_through_translation(setup, wire, relay_hub):
    client = openai.OpenAI(base_url=relay_hub.url + "/v1", api_key=setup.anthropic_key, max_retries=0)
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "run the tests"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": "{\"command\": \"ls\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
    ]
    tools = [{"type": "function", "function": {"name": "shell", "description": "Run a command.",
                                               "parameters": TOOLS_ANTHROPIC[0]["input_schema"]}}]
    wire.reply("/v1/messages", json_body=load_fixture("anthropic_message_tool_use.json"))
    completion = client.chat.completions.create(model="m", messages=history, tools=tools, max_tokens=500)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me run the tests to see the failure."
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls] == [
        ("toolu_01_shell", "shell", {"command": "pytest -q"}), ("toolu_02_list", "list_files", {})]
    assert (completion.usage.prompt_tokens, completion.usage.prompt_tokens_details.cached_tokens) == (312 + 1024 + 4096,
                                                                                                     4096)
    sent = wire.requests_to("/v1/messages")[-1].json
    assert (sent["model"], sent["max_tokens"]) == ("claude-sonnet-5", 500)
    assert sent["system"][0]["text"] == "Be brief."
    assert sent["tools"][0]["name"] == "shell"
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert sent["messages"][1]["content"][0] == {"type": "tool_use", "id": "call_1", "name": "shell",
                                                 "input": {"command": "ls"}}
    assert sent["messages"][2]["content"][0]["type"] == "tool_result"
    assert sent["messages"][2]["content"][0]["tool_use_id"] == "call_1"

    wire.reply("/v1/messages", json_body=load_fixture("anthropic_message_tool_use.json"))
    chunks = list(client.chat.completions.create(model="m", messages=history, tools=tools, stream=True))
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or ()]
    assert [(tc.index, tc.function.name) for tc in calls if tc.id] == [(0, "shell"), (1, "list_files")]
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    # Asked of the upstream as a stream too; this one answered whole, and is streamed all the same.
    assert wire.requests_to("/v1/messages")[-1].json.get("stream") is True

    wire.reply("/v1/messages", status=429, headers={"retry-after": "9"},
               json_body={"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
    with pytest.raises(openai.RateLimitError) as limited:
        client.chat.completions.create(model="m", messages=history)
    assert limited.value.response.headers["retry-after"] == "9"

    # The upstream's overflow comes back as the client's own context-length error.
    wire.reply("/v1/messages", status=400, json_body={"type": "error", "error": {
        "type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}})
    with pytest.raises(openai.BadRequestError) as overflow:
        client.chat.completions.create(model="m", messages=history)
    assert overflow.value.code == "context_length_exceeded"


def test_an_anthropic_client_reaches_an_openai_agent_through_translation(setup, wire, relay_hub):
    client = anthropic.Anthropic(base_url=relay_hub.url, api_key=setup.openai_key, max_retries=0)
    messages = [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": [{"type": "text", "text": "Reading."},
                                          {"type": "tool_use", "id": "toolu_1", "name": "read_file",
                                           "input": {"path": "a.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x = 1"},
                                     {"type": "text", "text": "and hurry"}]},
    ]
    tools = [{"name": "read_file", "description": "Read a file.", "input_schema": TOOLS_OPENAI[0]["function"]["parameters"]}]
    for _ in range(2):
        wire.reply("/v1/chat/completions", json_body=load_fixture("openai_chat_tool_calls.json"))
    message = client.messages.create(model="m", max_tokens=700, system="Be brief.", tools=tools, messages=messages)
    assert message.stop_reason == "tool_use"
    assert [(b.type, getattr(b, "input", None)) for b in message.content] == [
        ("text", None), ("tool_use", {"path": "tests/test_calc.py", "start": 1, "end": 40}), ("tool_use", {})]
    sent = wire.requests_to("/v1/chat/completions")[-1].json
    assert sent["model"] == "gpt-4.1" and sent["max_tokens"] == 700
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool", "user"]
    assert sent["messages"][3] == {"role": "tool", "tool_call_id": "toolu_1", "content": "x = 1"}
    assert sent["tools"][0]["function"]["name"] == "read_file"

    with client.messages.stream(model="m", max_tokens=700, tools=tools, messages=messages) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == "I'll read the failing test and list the package first."
    assert [(b.name, b.input) for b in final.content[1:]] == [
        ("read_file", {"path": "tests/test_calc.py", "start": 1, "end": 40}), ("list_files", {})]

    # What the neutral shapes cannot hold is refused, naming the block.
    with pytest.raises(anthropic.BadRequestError, match=r"messages\.0\.content\.0"):
        client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]}])
    assert len(wire.requests_to("/v1/chat/completions")) == 2


def test_a_stream_reaches_the_client_as_the_upstream_sends_it_not_when_it_ends(setup, wire, relay_hub):
    events = openai_tool_call_stream().split("\n\n")[:-1]
    first, rest = "\n\n".join(events[:2]) + "\n\n", "\n\n".join(events[2:]) + "\n\n"
    wire.stream("/v1/chat/completions", [(0.0, first), (2.5, rest)])
    client = openai.OpenAI(base_url=relay_hub.url + "/v1", api_key=setup.openai_key, max_retries=0)
    arrivals = []
    for chunk in client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True):
        arrivals.append((time.monotonic(), chunk))
    assert arrivals[0][1].choices[0].delta.content == "Reading "
    assert arrivals[-1][0] - arrivals[0][0] >= 2.0  # the first event did not wait for the last
    assert "".join(c.choices[0].delta.content or "" for _, c in arrivals if c.choices) == "Reading the test."


def test_a_long_history_passes_beyond_djangos_form_data_limit(setup, wire, relay_hub):
    text = "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1024)
    wire.reply("/v1/chat/completions", json_body=load_fixture("openai_chat_tool_calls.json"))
    client = openai.OpenAI(base_url=relay_hub.url + "/v1", api_key=setup.openai_key, max_retries=0)
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
    assert wire.requests_to("/v1/chat/completions")[-1].json["messages"][0]["content"] == text


def test_the_anthropic_sdk_counts_a_requests_tokens_by_the_gateways_estimate(setup, wire, relay_hub):
    """Claude Code asks /v1/messages/count_tokens (it was a 404); nothing goes upstream."""
    client = anthropic.Anthropic(base_url=relay_hub.url, api_key=setup.anthropic_key, max_retries=0)
    short = client.messages.count_tokens(model="m", messages=[{"role": "user", "content": "hi"}])
    longer = client.messages.count_tokens(
        model="m", system="You fix code.", messages=[{"role": "user", "content": "read calc.py " * 200}],
        tools=[{"name": "read", "description": "Read a file.", "input_schema": {"type": "object"}}],
        thinking={"type": "adaptive"})
    assert 0 < short.input_tokens < longer.input_tokens
    assert not wire.requests_to("/v1/messages") and not wire.requests_to("/v1/messages/count_tokens")
    with pytest.raises(anthropic.BadRequestError, match="messages.0.role"):
        client.messages.count_tokens(model="m", messages=[{"role": "robot", "content": "hi"}])
    with pytest.raises(anthropic.AuthenticationError):
        anthropic.Anthropic(base_url=relay_hub.url, api_key="atr-gw-nope", max_retries=0).messages.count_tokens(
            model="m", messages=[{"role": "user", "content": "hi"}])
