"""Provider failures through the whole runtime: the official SDK against a local
server speaking the OpenAI wire protocol (no SDK patching)."""

from __future__ import annotations

import json

import pytest

from agents.models import AgentProfile
from rooms.models import RoomAgent
from sessions.models import Fold, ProviderCall
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from sessions.worker.run import run_session
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


@pytest.mark.parametrize("first_answer", [
    {"status": 429, "json_body": {"error": {"message": "Rate limit", "type": "rate_limit_exceeded"}},
     "headers": {"Retry-After": "0"}},
    {"text": json.dumps(chat_reply("Nothing to change."))[:60]},  # a 200 cut off mid-body
], ids=["429", "cut-off-200"])
def test_a_transient_answer_is_retried_and_the_session_goes_on(start, wire, first_answer):
    wire.reply(CHAT, **first_answer)
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


# The rest of issue 28's provider fault matrix (transient answers, 5xx and overflows are
# above; a hung provider in tests/browser/test_waiting_for_the_model.py), each through a
# whole session: what it ends as, and what a person reads (its reason, or the model's).

def test_cut_off_bodies_until_the_attempts_run_out_fail_the_session_saying_so(start, wire):
    for _ in range(3):
        wire.reply(CHAT, text='{"id": "chatcmpl-test", "choices": [{"index": 0, "mess')
    session = start()
    run_session(session.pk)
    session.refresh_from_db()
    assert session.state == "failed"
    assert session.reason.startswith("model call failed:") and "cut off" in session.reason, session.reason
    assert "JSONDecodeError" not in session.reason and "internal error" not in session.reason
    assert ProviderCall.objects.get(session=session).error


def test_empty_answers_get_one_nudge_and_then_fail_the_session_never_succeed(start, wire):
    wire.reply(CHAT, json_body=chat_reply(""))
    wire.reply(CHAT, json_body=chat_reply(""))
    session = start()
    run_session(session.pk)
    session.refresh_from_db()
    assert session.state == "failed"
    assert "answered with nothing" in session.reason and "after it was told" in session.reason
    nudged = wire.requests_to(CHAT)[1].json["messages"][-1]
    assert nudged["role"] == "user" and nudged["content"]  # the model was told, once


def test_tool_call_json_that_does_not_parse_is_named_as_such_to_the_model(start, wire):
    broken = chat_reply("reading", [("call_0", "read_file", {})])
    broken["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"path": "textstats.py"'
    wire.reply(CHAT, json_body=broken)
    wire.reply(CHAT, json_body=chat_reply("Nothing to change."))
    session = start()
    run_session(session.pk)
    session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    told = next(m for m in wire.requests_to(CHAT)[1].json["messages"] if m["role"] == "tool")
    assert "JSON" in told["content"] and "__malformed_arguments__" not in told["content"], told["content"]
