"""Provider failures through the whole runtime: the official SDK against a local
server speaking the OpenAI wire protocol (no SDK patching)."""

from __future__ import annotations

import json

import pytest

from agents.models import AgentProfile, ProviderCall, RoomAgent
from agents.runtime.worker import run_session
from agents.services import session_start, task_create
from observations.models import Fold
from tests.agents.providers.wire_server import WireServer, load_fixture

CHAT = "/v1/chat/completions"


def chat_reply(text: str = "", calls: list[tuple[str, str, dict]] = (), prompt_tokens: int = 900) -> dict:
    message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, name, args in calls
        ]
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 20, "total_tokens": prompt_tokens + 20},
    }


def overflow_body() -> str:
    case = next(c for c in load_fixture("error_bodies.json")["cases"] if c["name"] == "openai_context_length_exceeded")
    return case["body"] if isinstance(case["body"], str) else json.dumps(case["body"])


@pytest.fixture
def wire():
    server = WireServer()
    yield server
    server.close()


@pytest.fixture
def fast_retries(settings):
    settings.ATRIUM_PROVIDER_MAX_ATTEMPTS = 3
    settings.ATRIUM_PROVIDER_RETRY_BASE_SECONDS = 0.0


@pytest.fixture
def start(person, demo_room, wire, fast_retries):
    def start(window: int = 32_000):
        agent = AgentProfile.objects.create(name=f"wired-{window}", model="openai:test-model", base_url=f"{wire.url}/v1",
                                            api_key="sk-test-key", context_window=window, output_budget=1_000)
        RoomAgent.objects.create(room=demo_room, agent=agent)
        demo_room.check_command = ""
        demo_room.save()
        task = task_create(room=demo_room, actor=person, title="Look around", objective="Read the code")
        return session_start(task=task, agent=agent, actor=person)

    return start


def test_a_429_is_retried_and_the_session_goes_on(start, wire):
    wire.reply(CHAT, status=429, json_body={"error": {"message": "Rate limit", "type": "rate_limit_exceeded"}},
               headers={"Retry-After": "0"})
    wire.reply(CHAT, json_body=chat_reply("Nothing to change."))
    session = start()
    run_session(session.pk)
    session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    assert len(wire.requests_to(CHAT)) == 2
    assert ProviderCall.objects.get(session=session).input_tokens == 900


def test_5xx_until_the_attempts_run_out_fails_the_session_with_a_clear_reason(start, wire):
    for _ in range(3):
        wire.reply(CHAT, status=503, json_body={"error": {"message": "upstream unavailable"}})
    session = start()
    run_session(session.pk)
    session.refresh_from_db()
    assert session.state == "failed"
    assert session.reason.startswith("model call failed:") and "503" in session.reason
    assert "sk-test-key" not in session.reason
    assert len(wire.requests_to(CHAT)) == 3
    assert ProviderCall.objects.get(session=session).error


def test_an_overflow_folds_and_retries_once_with_a_different_request(start, wire):
    for n, path in enumerate(["textstats.py", "test_textstats.py", "README.md"]):
        wire.reply(CHAT, json_body=chat_reply(f"reading {path}", [(f"call_{n}", "read_file", {"path": path})]))
    wire.reply(CHAT, status=400, text=overflow_body())
    wire.reply(CHAT, json_body=chat_reply("Done reading."))
    session = start(window=8_000)
    run_session(session.pk)
    session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    requests = [r.json for r in wire.requests_to(CHAT)]
    assert len(requests) == 5  # three steps, the overflow, one retry
    overflowed, retried = requests[3], requests[4]
    assert overflowed["messages"] != retried["messages"]
    assert any(str(m.get("content")).startswith("[receipt ") for m in retried["messages"] if m["role"] == "tool")
    # (A cost-driven fold may come first; the overflow forces one of its own.)
    fold = Fold.objects.get(session=session, reason="overflow")
    assert fold.evicted


def test_an_overflow_with_nothing_to_evict_fails_instead_of_looping(start, wire):
    wire.reply(CHAT, status=400, text=overflow_body())
    session = start()
    run_session(session.pk)
    session.refresh_from_db()
    assert session.state == "failed"
    assert "nothing is left to evict" in session.reason
    assert len(wire.requests_to(CHAT)) == 1  # never sent again unchanged
