"""Session mode streams: the upstream is called streaming and its pieces reach the
client as they arrive, in the client's format (also translated), through the official
SDKs and a real Daphne; the turn is recorded when the stream ends; a client that leaves
mid-stream closes the upstream stream and leaves a session its retry goes on with."""

from __future__ import annotations

import http.client
import json
import time
from urllib.parse import urlsplit

import anthropic
import openai
import pytest

from sessions.models import ProviderCall, Session, SessionEvent
from tests.endpoint.conftest import sse
from tests.endpoint.test_sessions import FILE, PATH, TOOLS, client, completion

pytestmark = pytest.mark.timeout(120)

PAUSE = 2.5  # the upstream's pause in mid-answer, before the part at ``after`` (a loaded box took over 1 s to pass a piece on)
ANTHROPIC_TOOLS = [{"name": "shell", "description": "Run a command.",
                    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]


def chat_chunks(pieces: list[dict], *, finish: str) -> list[str]:
    """An OpenAI upstream's chunks: each delta, the finish, the usage, ``[DONE]``."""
    head = {"id": "chatcmpl-up", "object": "chat.completion.chunk", "created": 1760000000, "model": "gpt-4.1"}
    events = [(None, {**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}) for d in pieces]
    events += [(None, {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
               (None, {**head, "choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 9,
                                                        "total_tokens": 129}}),
               (None, "[DONE]")]
    return [sse([event]) for event in events]


def anthropic_events() -> list[str]:
    """An Anthropic upstream's stream: a text block in two pieces, then a tool call in two."""
    message = {"id": "msg_up", "type": "message", "role": "assistant", "model": "claude-sonnet-5", "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 1}}

    def delta(index: int, wire: dict) -> tuple[str, dict]:
        return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": wire}

    events = [
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        delta(0, {"type": "text_delta", "text": "Running "}),
        delta(0, {"type": "text_delta", "text": "the tests."}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
            "type": "tool_use", "id": "toolu_1", "name": "shell", "input": {}}}),
        delta(1, {"type": "input_json_delta", "partial_json": "{\"command\": "}),
        delta(1, {"type": "input_json_delta", "partial_json": "\"pytest -q\"}"}),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                           "usage": {"output_tokens": 20}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return [sse([event]) for event in events]


def paused(parts: list[str], after: int) -> list[tuple[float, str]]:
    """The parts, the upstream pausing PAUSE before part ``after``."""
    return [(PAUSE if i == after else 0.0, part) for i, part in enumerate(parts)]


def test_an_openai_client_gets_the_upstreams_pieces_as_they_come_and_the_turn_is_recorded(setup, wire, hub):
    wire.stream(PATH, paused(chat_chunks([
        {"role": "assistant", "content": "Reading "},
        {"content": "the test."},
        {"tool_calls": [{"index": 0, "id": "call_7", "type": "function",
                         "function": {"name": "read_file", "arguments": "{\"path\": "}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": "\"geo.py\"}"}}]},
    ], finish="tool_calls"), after=2))
    gateway = client(hub, setup.openai_key)
    messages = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Fix geo.py"}]
    arrived: list[tuple[float, object]] = []
    for chunk in gateway.chat.completions.create(model="m", messages=messages, tools=TOOLS, stream=True,
                                                 stream_options={"include_usage": True}):
        arrived.append((time.monotonic(), chunk))
    first_text = next(at for at, c in arrived if c.choices and c.choices[0].delta.content)
    assert first_text < wire.parts_sent[2], "the first text waited for the rest of the turn"
    chunks = [c for _, c in arrived]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Reading the test."
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or ()]
    assert (calls[0].id, calls[0].function.name) == ("call_7", "read_file")
    assert json.loads("".join(tc.function.arguments or "" for tc in calls)) == {"path": "geo.py"}
    assert chunks[-1].usage.prompt_tokens == 120 and chunks[-1].choices == []
    assert wire.requests_to(PATH)[-1].json["stream"] is True

    # Recorded when the stream ended: the reply on the session's log, and the next request continues it.
    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    reply = SessionEvent.objects.get(session=session, kind="model.reply").payload
    assert reply["text"] == "Reading the test." and reply["tool_calls"][0]["arguments"] == {"path": "geo.py"}
    assert reply["input_tokens"] == 120
    messages += [{"role": "assistant", "content": "Reading the test.", "tool_calls": [
        {"id": "call_7", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"geo.py\"}"}}]},
        {"role": "tool", "tool_call_id": "call_7", "content": FILE}]
    wire.reply(PATH, json_body=completion(text="Fixed.", n=2))
    assert gateway.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0].message.content \
        == "Fixed."
    assert Session.objects.filter(origin=Session.Origin.ENDPOINT).count() == 1
    assert ProviderCall.objects.filter(session=session, error="").count() == 2


def test_an_anthropic_client_gets_text_and_tool_input_as_they_come_with_the_usage_in_the_last_events(
        setup, wire, hub):
    wire.stream("/v1/messages", paused(anthropic_events(), after=3))
    claude = anthropic.Anthropic(base_url=hub.url, api_key=setup.anthropic_key, max_retries=0)
    seen: list[tuple[float, str]] = []
    with claude.messages.stream(model="c", max_tokens=2000, tools=ANTHROPIC_TOOLS,
                                messages=[{"role": "user", "content": "Run the tests"}]) as stream:
        for event in stream:
            seen.append((time.monotonic(), event.type))
        final = stream.get_final_message()
    first_text = next(at for at, kind in seen if kind == "text")
    assert first_text < wire.parts_sent[3]
    assert [b.type for b in final.content] == ["text", "tool_use"]
    assert final.content[0].text == "Running the tests."
    assert (final.content[1].id, final.content[1].input) == ("toolu_1", {"command": "pytest -q"})
    assert final.stop_reason == "tool_use"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (12, 20)


def test_a_responses_client_of_an_anthropic_agent_gets_the_translated_pieces_as_they_come(setup, wire, hub):
    wire.stream("/v1/messages", paused(anthropic_events(), after=7))
    codex = openai.OpenAI(base_url=hub.url + "/v1", api_key=setup.anthropic_key, max_retries=0)
    tools = [{"type": "function", "name": "shell", "description": "Run a command.",
              "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}]
    seen: list[tuple[float, object]] = []
    with codex.responses.stream(model="m", input="Run the tests", tools=tools, store=False) as stream:
        for event in stream:
            seen.append((time.monotonic(), event))
        final = stream.get_final_response()
    first_arguments = next(at for at, e in seen if e.type == "response.function_call_arguments.delta")
    assert first_arguments < wire.parts_sent[7]  # the call's first piece came before the rest of it
    added = [e.item.id for _, e in seen if e.type == "response.output_item.added"]
    assert [item.id for item in final.output] == added  # the whole response keeps the streamed items' ids
    assert final.output[0].content[0].text == "Running the tests."
    assert (final.output[1].call_id, json.loads(final.output[1].arguments)) == ("toolu_1", {"command": "pytest -q"})
    assert final.usage.input_tokens == 12 and final.usage.output_tokens == 20


def test_a_client_that_leaves_mid_stream_closes_the_upstream_stream_and_its_retry_goes_on(setup, wire, hub):
    pieces = [{"role": "assistant", "content": "Thinking "}] + [{"content": f"step {n}. "} for n in range(20)]
    wire.stream(PATH, [(0.0 if i == 0 else 0.25, part) for i, part in enumerate(chat_chunks(pieces, finish="stop"))])
    messages = [{"role": "user", "content": "Explain geo.py"}]
    body = json.dumps({"model": "m", "messages": messages, "stream": True})
    address = urlsplit(hub.url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    connection.request("POST", "/v1/chat/completions", body=body, headers={
        "Authorization": f"Bearer {setup.openai_key}", "Content-Type": "application/json"})
    answer = connection.getresponse()
    assert answer.status == 200
    assert answer.readline().startswith(b"data: ")
    connection.sock.close()  # the client goes away mid-stream
    connection.close()
    left = time.monotonic()
    while PATH not in wire.cut_off and time.monotonic() - left < 4:
        time.sleep(0.05)
    assert PATH in wire.cut_off, "the upstream stream went on after its client left"
    assert time.monotonic() - left < 3  # well before its 5 s end

    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    deadline = time.monotonic() + 10
    while not ProviderCall.objects.filter(session=session).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    failed = ProviderCall.objects.get(session=session)
    assert "left the stream" in failed.error
    assert not SessionEvent.objects.filter(session=session, kind="model.reply").exists()

    wire.reply(PATH, json_body=completion(text="geo.py computes areas.", n=2))
    retried = client(hub, setup.openai_key).chat.completions.create(model="m", messages=messages)
    assert retried.choices[0].message.content == "geo.py computes areas."
    assert Session.objects.filter(origin=Session.Origin.ENDPOINT).count() == 1
    assert [m["role"] for m in wire.requests_to(PATH)[-1].json["messages"]] == ["user"]


def test_an_upstream_stream_cut_off_after_its_first_piece_is_the_clients_error_event(setup, wire, hub):
    wire.stream(PATH, [(0.0, part) for part in chat_chunks([{"role": "assistant", "content": "Half "}],
                                                            finish="stop")[:1]])
    stream = client(hub, setup.openai_key).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Explain geo.py"}], stream=True)
    with pytest.raises(openai.APIError) as failed:
        for _ in stream:
            pass
    assert "cut off" in str(failed.value) or "upstream" in str(failed.value)
    session = Session.objects.get(origin=Session.Origin.ENDPOINT)
    assert ProviderCall.objects.get(session=session).error
