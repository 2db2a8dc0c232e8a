"""A client's request parameters through the official SDKs, the hub under a real Daphne
and the local wire-protocol server upstream: on the session path and the translated one
the upstream receives each in its provider's words, and what cannot be honoured is the
provider-shaped 400 naming the field, with nothing sent upstream."""

from __future__ import annotations

import anthropic
import openai
import pytest

from endpoint.params import IGNORED_HEADER
from tests.agents.providers.wire_server import load_fixture

pytestmark = pytest.mark.timeout(120)

CHAT, MESSAGES = "/v1/chat/completions", "/v1/messages"
OPENAI_TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                                  "parameters": {"type": "object",
                                                                 "properties": {"path": {"type": "string"}}}}}]
ANTHROPIC_TOOLS = [{"name": "shell", "description": "Run a command.",
                    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]
HISTORY = [{"role": "user", "content": "fix calc.py"}]
SCHEMA = {"type": "object", "properties": {"fixed": {"type": "boolean"}}, "required": ["fixed"]}


def gpt_client(hub, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=hub.url + "/v1", api_key=key, max_retries=0)


def claude_client(hub, key: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=hub.url, api_key=key, max_retries=0)


def last(wire, path: str) -> dict:
    return wire.requests_to(path)[-1].json


def test_an_openai_clients_parameters_reach_its_agents_upstream_through_the_session(setup, wire, hub):
    client = gpt_client(hub, setup.openai_key)
    wire.reply(CHAT, json_body=load_fixture("openai_chat_tool_calls.json"))
    raw = client.chat.completions.with_raw_response.create(
        model="m", messages=HISTORY, tools=OPENAI_TOOLS, stop=["END", "\nObservation:"], temperature=0.2,
        top_p=0.9, seed=7, tool_choice={"type": "function", "function": {"name": "read_file"}},
        parallel_tool_calls=False, response_format={"type": "json_object"}, max_completion_tokens=100_000,
        user="person-1", extra_body={"top_k": 20})
    assert raw.parse().choices[0].finish_reason == "tool_calls"
    assert IGNORED_HEADER.lower() not in raw.headers
    sent = last(wire, CHAT)
    assert {k: sent.get(k) for k in ("stop", "temperature", "top_p", "seed", "tool_choice", "parallel_tool_calls",
                                     "response_format", "user", "top_k")} == {
        "stop": ["END", "\nObservation:"], "temperature": 0.2, "top_p": 0.9, "seed": 7,
        "tool_choice": {"type": "function", "function": {"name": "read_file"}}, "parallel_tool_calls": False,
        "response_format": {"type": "json_object"}, "user": "person-1", "top_k": 20}
    # The client's limit up to the model's own (gpt-4.1 writes at most 32,768), which the
    # session's budget then reserves of the window.
    assert sent["max_tokens"] == 32_768 and "max_completion_tokens" not in sent
    assert sent["model"] == "gpt-4.1" and "n" not in sent

    for refused, param in (({"n": 2}, "n"), ({"logprobs": True}, "logprobs"), ({"tool_choice": "any"}, "tool_choice"),
                           ({"temperature": 3}, "temperature")):
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model="m", messages=HISTORY, tools=OPENAI_TOOLS, **refused)
        assert caught.value.param == param and caught.value.body["message"].startswith(param)
    assert len(wire.requests_to(CHAT)) == 1


def test_an_anthropic_clients_parameters_reach_its_agents_upstream_through_the_session(setup, wire, hub):
    client = claude_client(hub, setup.anthropic_key)
    wire.reply(MESSAGES, json_body=load_fixture("anthropic_message_tool_use.json"))
    message = client.messages.create(
        model="m", max_tokens=1000, messages=HISTORY, tools=ANTHROPIC_TOOLS, stop_sequences=["\nObservation:"],
        tool_choice={"type": "any", "disable_parallel_tool_use": True}, metadata={"user_id": "person-2"},
        extra_body={"temperature": 0.3, "top_k": 5}, extra_headers={"anthropic-beta": "effort-2025-11-24"})
    assert message.stop_reason == "tool_use"
    assert wire.requests_to(MESSAGES)[-1].headers["anthropic-beta"] == "effort-2025-11-24"  # its betas go along
    sent = last(wire, MESSAGES)
    assert {k: sent.get(k) for k in ("stop_sequences", "tool_choice", "metadata", "temperature", "top_k",
                                     "max_tokens")} == {
        "stop_sequences": ["\nObservation:"], "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "metadata": {"user_id": "person-2"}, "temperature": 0.3, "top_k": 5, "max_tokens": 1000}

    # The stop sequence that ended the text comes back as the upstream said it.
    stopped = {**load_fixture("anthropic_message_text.json"), "stop_reason": "stop_sequence",
               "stop_sequence": "\nObservation:"}
    wire.reply(MESSAGES, json_body=stopped)
    message = client.messages.create(model="m", max_tokens=500, stop_sequences=["\nObservation:"],
                                     messages=[{"role": "user", "content": "think aloud"}])
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "\nObservation:")

    # Thinking goes to the Anthropic upstream as the client gave it.
    wire.reply(MESSAGES, json_body=load_fixture("anthropic_message_text.json"))
    raw = client.messages.with_raw_response.create(model="m", max_tokens=20_000, messages=HISTORY,
                                                   tools=ANTHROPIC_TOOLS, thinking={"type": "enabled",
                                                                                    "budget_tokens": 1024})
    assert IGNORED_HEADER not in raw.headers
    assert last(wire, MESSAGES)["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert last(wire, MESSAGES)["max_tokens"] == 20_000  # as asked, not the agent's 8,000
    with pytest.raises(anthropic.BadRequestError, match=r"tool_choice: no tool named 'read_file'"):
        client.messages.create(model="m", max_tokens=10, messages=HISTORY, tools=ANTHROPIC_TOOLS,
                               tool_choice={"type": "tool", "name": "read_file"})
    assert len(wire.requests_to(MESSAGES)) == 3


def test_parameters_are_translated_between_the_formats_in_a_session(setup, wire, hub):
    # An OpenAI client, an Anthropic agent.
    wire.reply(MESSAGES, json_body=load_fixture("anthropic_message_tool_use.json"))
    tools = [{"type": "function", "function": {"name": "shell", "parameters": ANTHROPIC_TOOLS[0]["input_schema"]}}]
    raw = gpt_client(hub, setup.anthropic_key).chat.completions.with_raw_response.create(
        model="m", messages=HISTORY, tools=tools, stop="END", tool_choice="required", parallel_tool_calls=False,
        temperature=0.5, max_tokens=300, seed=3, reasoning_effort="low",
        response_format={"type": "json_schema", "json_schema": {"name": "verdict", "schema": SCHEMA}},
        extra_body={"vendor_extra": True})
    assert raw.headers[IGNORED_HEADER] == "seed, vendor_extra"
    sent = last(wire, MESSAGES)
    assert {k: sent.get(k) for k in ("stop_sequences", "tool_choice", "temperature", "max_tokens",
                                     "output_config")} == {
        "stop_sequences": ["END"], "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        "temperature": 0.5, "max_tokens": 300,
        "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}, "effort": "low"}}
    assert "seed" not in sent and "vendor_extra" not in sent
    for refused, param in (({"response_format": {"type": "json_object"}}, "response_format"),
                           ({"temperature": 1.5}, "temperature"), ({"n": 2}, "n")):
        with pytest.raises(openai.BadRequestError) as caught:
            gpt_client(hub, setup.anthropic_key).chat.completions.create(model="m", messages=HISTORY, **refused)
        assert caught.value.param == param
    assert len(wire.requests_to(MESSAGES)) == 1

    # An Anthropic client, an OpenAI agent.
    wire.reply(CHAT, json_body=load_fixture("openai_chat_tool_calls.json"))
    tools = [{"name": "read_file", "input_schema": OPENAI_TOOLS[0]["function"]["parameters"]}]
    claude_client(hub, setup.openai_key).messages.create(
        model="m", max_tokens=700, messages=HISTORY, tools=tools, stop_sequences=["\n\nHuman:"],
        tool_choice={"type": "tool", "name": "read_file"}, metadata={"user_id": "person-3"})
    sent = last(wire, CHAT)
    assert {k: sent.get(k) for k in ("stop", "tool_choice", "user", "max_tokens")} == {
        "stop": ["\n\nHuman:"], "tool_choice": {"type": "function", "function": {"name": "read_file"}},
        "user": "person-3", "max_tokens": 700}
    with pytest.raises(anthropic.BadRequestError) as caught:
        claude_client(hub, setup.openai_key).messages.create(model="m", max_tokens=10, messages=HISTORY,
                                                             extra_body={"top_k": 5})
    assert caught.value.body["error"]["message"].startswith("top_k: this key's agent runs an OpenAI model")
    assert len(wire.requests_to(CHAT)) == 1


def test_the_translated_path_without_sessions_carries_and_refuses_alike(setup, wire, relay_hub):
    wire.reply(MESSAGES, json_body=load_fixture("anthropic_message_tool_use.json"))
    tools = [{"type": "function", "function": {"name": "shell", "parameters": ANTHROPIC_TOOLS[0]["input_schema"]}}]
    client = gpt_client(relay_hub, setup.anthropic_key)
    client.chat.completions.create(model="m", messages=HISTORY, tools=tools, stop=["END"],
                                   tool_choice={"type": "function", "function": {"name": "shell"}}, top_p=0.5)
    sent = last(wire, MESSAGES)
    assert (sent["stop_sequences"], sent["tool_choice"], sent["top_p"]) == (
        ["END"], {"type": "tool", "name": "shell"}, 0.5)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="m", messages=HISTORY, n=2)
    assert caught.value.param == "n"
    assert len(wire.requests_to(MESSAGES)) == 1

    # The pass-through relays the body as it is: the upstream decides.
    wire.reply(CHAT, json_body=load_fixture("openai_chat_tool_calls.json"))
    gpt_client(relay_hub, setup.openai_key).chat.completions.create(model="m", messages=HISTORY, n=2, stop="END")
    assert (last(wire, CHAT)["n"], last(wire, CHAT)["stop"]) == (2, "END")
