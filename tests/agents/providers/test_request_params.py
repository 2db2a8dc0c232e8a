"""A request's client settings (``Request.params``) on the wire, in each provider's own
words, through the official SDKs to the local wire-protocol server."""

from __future__ import annotations

from dataclasses import replace

from agents.providers import RetryPolicy, provider_for
from agents.providers.timeouts import Timeouts
from observations.gateway.messages import Params, ToolChoice
from tests.agents.providers.requests import session_request
from tests.agents.providers.wire_server import load_fixture

SETTINGS = Params(
    temperature=0.3,
    top_p=0.8,
    stop=("END", "\nObservation:"),
    user="u-7",
    tool_choice=ToolChoice("tool", "read_file"),
    parallel_tool_calls=False,
)


def provider(spec: str, wire):
    base_url = wire.url + "/v1" if spec.startswith("openai:") else wire.url
    return provider_for(
        spec,
        api_key="sk-test-0123456789",
        base_url=base_url,
        env={},
        timeouts=Timeouts(connect=5, answer=5),
        policy=RetryPolicy(max_attempts=1),
    )


def test_openai_gets_the_settings_in_chat_completions_words_and_its_own_fields_as_they_are(wire):
    wire.reply("/v1/chat/completions", json_body=load_fixture("openai_chat_tool_calls.json"))
    native = {
        "openai": {"seed": 11, "response_format": {"type": "json_object"}, "temperature": 2},
        "anthropic": {"top_k": 3},
    }
    request = replace(session_request(), params=replace(SETTINGS, native=native))
    provider("openai:gpt-4.1", wire).call(request)
    sent = wire.requests_to("/v1/chat/completions")[-1].json
    assert {
        k: sent[k]
        for k in ("temperature", "top_p", "stop", "user", "tool_choice", "parallel_tool_calls")
    } == {
        "temperature": 0.3,
        "top_p": 0.8,
        "stop": ["END", "\nObservation:"],
        "user": "u-7",
        "tool_choice": {"type": "function", "function": {"name": "read_file"}},
        "parallel_tool_calls": False,
    }
    # Its own format's fields go as they are, never over one the gateway set; the other's never.
    assert (sent["seed"], sent["response_format"]) == (11, {"type": "json_object"})
    assert "top_k" not in sent


def test_anthropic_gets_stop_sequences_any_and_disable_parallel_tool_use(wire):
    for _ in range(3):
        wire.reply("/v1/messages", json_body=load_fixture("anthropic_message_tool_use.json"))
    claude = provider("anthropic:claude-sonnet-5", wire)
    claude.call(
        replace(session_request(), params=replace(SETTINGS, native={"anthropic": {"top_k": 3}}))
    )
    sent = wire.requests_to("/v1/messages")[-1].json
    assert {
        k: sent[k]
        for k in ("temperature", "top_p", "stop_sequences", "metadata", "tool_choice", "top_k")
    } == {
        "temperature": 0.3,
        "top_p": 0.8,
        "stop_sequences": ["END", "\nObservation:"],
        "metadata": {"user_id": "u-7"},
        "top_k": 3,
        "tool_choice": {"type": "tool", "name": "read_file", "disable_parallel_tool_use": True},
    }

    claude.call(replace(session_request(), params=Params(tool_choice=ToolChoice("required"))))
    assert wire.requests_to("/v1/messages")[-1].json["tool_choice"] == {"type": "any"}
    claude.call(replace(session_request(), params=Params(parallel_tool_calls=False)))
    assert wire.requests_to("/v1/messages")[-1].json["tool_choice"] == {
        "type": "auto",
        "disable_parallel_tool_use": True,
    }


def test_no_settings_and_no_tools_send_nothing_of_them(wire):
    wire.reply("/v1/chat/completions", json_body=load_fixture("openai_chat_tool_calls.json"))
    wire.reply("/v1/messages", json_body=load_fixture("anthropic_message_text.json"))
    bare = replace(
        session_request(),
        tools=(),
        params=Params(tool_choice=ToolChoice("auto"), parallel_tool_calls=True),
    )
    provider("openai:gpt-4.1", wire).call(bare)
    provider("anthropic:claude-sonnet-5", wire).call(bare)
    keys = {
        "temperature",
        "top_p",
        "stop",
        "stop_sequences",
        "tool_choice",
        "parallel_tool_calls",
        "metadata",
        "user",
    }
    assert not keys & set(wire.requests_to("/v1/chat/completions")[-1].json)
    assert not keys & set(wire.requests_to("/v1/messages")[-1].json)


def test_a_json_schema_and_an_effort_in_each_providers_words(wire):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    wire.reply("/v1/chat/completions", json_body=load_fixture("openai_chat_tool_calls.json"))
    wire.reply("/v1/messages", json_body=load_fixture("anthropic_message_text.json"))
    request = replace(session_request(), params=Params(json_schema=schema, effort="high"))
    provider("openai:gpt-4.1", wire).call(request)
    provider("anthropic:claude-sonnet-5", wire).call(request)
    chat = wire.requests_to("/v1/chat/completions")[-1].json
    assert chat["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": schema},
    }
    assert chat["reasoning_effort"] == "high"
    assert wire.requests_to("/v1/messages")[-1].json["output_config"] == {
        "format": {"type": "json_schema", "schema": schema},
        "effort": "high",
    }
