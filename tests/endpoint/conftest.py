"""A room with an ``openai:`` and an ``anthropic:`` agent whose upstream is the local
wire-protocol server of the provider tests, keys for them, and the hub under a real
Daphne for the SDKs to call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from endpoint.keys import gateway_key_create
from rooms.models import Room
from tests.agents.providers.wire_server import WireServer
from tests.conftest import DaphneServer, start_daphne
from tests.rooms.factories import make_agent, make_room, make_user

UPSTREAM_KEY = "sk-upstream-profile-key-0001"


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer()
    yield server
    server.close()


@dataclass
class Setup:
    room: Room
    openai_key: str
    anthropic_key: str
    replay_key: str


@pytest.fixture
def owner(transactional_db):
    return make_user("olga")


@pytest.fixture
def setup(owner, wire) -> Setup:
    gpt = make_agent("gpt", "openai:gpt-4.1", base_url=wire.url + "/v1", api_key=UPSTREAM_KEY, owner=owner)
    claude = make_agent("claude", "anthropic:claude-sonnet-5", base_url=wire.url, api_key=UPSTREAM_KEY, owner=owner)
    replayer = make_agent("replayer", "replay:demo.jsonl")
    room = make_room(owner, "Victim room", agents=[gpt, claude, replayer])
    keys = [gateway_key_create(room=room, actor=owner, agent_id=agent.pk, name=f"{agent.name} key").token
            for agent in (gpt, claude, replayer)]
    return Setup(room, *keys)


@pytest.fixture
def hub(transactional_db, tmp_path) -> Iterator[DaphneServer]:
    server = start_daphne(tmp_path / "daphne.log")
    try:
        yield server
    finally:
        server.hub_process.stop()


@pytest.fixture
def relay_hub(transactional_db, tmp_path, settings) -> Iterator[DaphneServer]:
    """The hub with its gateway sessions off: the endpoint only relays (pass-through)."""
    settings.ATRIUM_GATEWAY_SESSIONS = False
    server = start_daphne(tmp_path / "daphne.log", ATRIUM_GATEWAY_SESSIONS="False")
    try:
        yield server
    finally:
        server.hub_process.stop()


def sse(events: list[tuple[str | None, object]]) -> str:
    """A server-sent event stream: ``(event name or None, data)``; data ``"[DONE]"`` as is."""
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
    return "".join(out)


def openai_tool_call_stream() -> str:
    base = {"id": "chatcmpl-s1", "object": "chat.completion.chunk", "created": 1760000000, "model": "gpt-4.1"}

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    return sse([
        (None, chunk({"role": "assistant", "content": "Reading "})),
        (None, chunk({"content": "the test."})),
        (None, chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                      "function": {"name": "read_file", "arguments": "{\"path\": "}}]})),
        (None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": "\"a.py\"}"}}]})),
        (None, chunk({}, "tool_calls")),
        (None, {**base, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}),
        (None, "[DONE]"),
    ])


def anthropic_tool_use_stream() -> str:
    message = {"id": "msg_s1", "type": "message", "role": "assistant", "model": "claude-sonnet-5", "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 1}}
    return sse([
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("ping", {"type": "ping"}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "Running the tests."}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1,
                                 "content_block": {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "input_json_delta", "partial_json": "{\"command\": "}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "input_json_delta", "partial_json": "\"pytest -q\"}"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                           "usage": {"output_tokens": 20}}),
        ("message_stop", {"type": "message_stop"}),
    ])


def streamed_answer(answer: dict) -> list[tuple[float, str]]:
    """A scripted whole answer (an OpenAI chat completion or an Anthropic message) as its
    upstream streams it, for ``WireServer.stream``: text and each tool call's arguments
    in two pieces."""
    if answer.get("type") == "message":
        events: list[tuple[str | None, object]] = [("message_start", {"type": "message_start", "message": {
            **answer, "content": [], "stop_reason": None, "usage": {**answer["usage"], "output_tokens": 1}}})]
        for index, block in enumerate(answer["content"]):
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": _empty(block)}))
            events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
                       for delta in _deltas(block)]
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": answer["stop_reason"],
                                                                         "stop_sequence": None},
                                      "usage": {"output_tokens": answer["usage"]["output_tokens"]}}),
                   ("message_stop", {"type": "message_stop"})]
        return [(0.0, sse([event])) for event in events]
    head = {k: answer[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    message, finish = answer["choices"][0]["message"], answer["choices"][0]["finish_reason"]

    def chunk(delta: dict, end: str | None = None) -> tuple[str | None, object]:
        return None, {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": end}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in filter(None, _halves(message.get("content") or ""))]
    for index, call in enumerate(message.get("tool_calls") or ()):
        first, rest = _halves(call["function"]["arguments"])
        chunks += [chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                          "function": {"name": call["function"]["name"], "arguments": first}}]}),
                   chunk({"tool_calls": [{"index": index, "function": {"arguments": rest}}]})]
    chunks += [chunk({}, finish), (None, {**head, "choices": [], "usage": answer["usage"]}), (None, "[DONE]")]
    return [(0.0, sse([c])) for c in chunks]


def _empty(block: dict) -> dict:
    return {"text": {"type": "text", "text": ""}, "thinking": {"type": "thinking", "thinking": "", "signature": ""},
            "tool_use": {**block, "input": {}}}[block["type"]]


def _deltas(block: dict) -> list[dict]:
    if block["type"] == "thinking":
        return [*({"type": "thinking_delta", "thinking": p} for p in filter(None, _halves(block["thinking"]))),
                {"type": "signature_delta", "signature": block["signature"]}]
    if block["type"] == "text":
        return [{"type": "text_delta", "text": p} for p in filter(None, _halves(block["text"]))]
    return [{"type": "input_json_delta", "partial_json": p} for p in filter(None, _halves(json.dumps(block["input"])))]


def _halves(text: str) -> tuple[str, str]:
    return text[:len(text) // 2], text[len(text) // 2:]
