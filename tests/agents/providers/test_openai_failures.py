"""The OpenAI provider when the server fails: 429s and 5xx retried as the server asks,
time-outs and hung servers bounded, overflows never retried, a bad key named without the
key, refused connections falling back, a body cut off."""

from __future__ import annotations

import json
import time

import pytest

from agents.providers import (
    ConnectionFailed,
    ContextOverflow,
    ModelEndpoint,
    Rejected,
    RetryPolicy,
    Transient,
    provider_for,
)
from agents.providers.timeouts import Timeouts
from tests.agents.providers.requests import first_request, session_request
from tests.agents.providers.test_openai_provider import CHAT, KEY, openai_for, overflow_cases
from tests.agents.providers.wire_server import load_fixture


def test_a_429_is_retried_after_exactly_the_retry_after_the_server_asked_for(wire, sleep):
    wire.reply(
        CHAT,
        status=429,
        headers={"Retry-After": "7"},
        json_body={
            "error": {
                "message": "Rate limit reached for gpt-4.1 on requests per min (RPM): Limit 3.",
                "type": "requests",
                "code": "rate_limit_exceeded",
            }
        },
    )
    wire.reply(CHAT, json_body=load_fixture("openai_chat_tool_calls.json"))

    completion = openai_for(wire, sleep).call(first_request())

    assert sleep.delays == [7.0]
    assert len(wire.requests_to(CHAT)) == 2
    assert completion.record.attempts == 2
    assert completion.turn.tool_calls


def test_5xx_without_retry_after_backs_off_exponentially_then_gives_up_as_transient(wire, sleep):
    for status in (500, 503, 502):
        wire.reply(
            CHAT,
            status=status,
            json_body={
                "error": {
                    "message": "The server had an error processing your request.",
                    "type": "server_error",
                }
            },
        )

    with pytest.raises(Transient) as caught:
        openai_for(wire, sleep).call(first_request())

    assert len(wire.requests_to(CHAT)) == 3
    # rng fixed at 0.5: half the ceiling plus a quarter; ceilings 0.5 s then 1 s.
    assert sleep.delays == [0.375, 0.75]
    assert caught.value.status == 502
    assert caught.value.record.attempts == 3
    assert caught.value.record.error_kind == "transient"


def test_a_retry_after_beyond_the_bound_ends_the_call_instead_of_sleeping(wire, sleep):
    wire.reply(
        CHAT,
        status=429,
        headers={"Retry-After": "3600"},
        json_body={"error": {"message": "Rate limit", "code": "rate_limit_exceeded"}},
    )

    with pytest.raises(Transient) as caught:
        openai_for(wire, sleep).call(first_request())

    assert caught.value.retry_after == 3600
    assert sleep.delays == []
    assert len(wire.requests_to(CHAT)) == 1


def test_a_timeout_is_transient_and_retried(wire, sleep):
    wire.reply(CHAT, json_body=load_fixture("deepseek_chat_text.json"), delay=1.5)
    wire.reply(CHAT, json_body=load_fixture("deepseek_chat_text.json"))
    provider = provider_for(
        "openai:deepseek-chat",
        api_key=KEY,
        base_url=f"{wire.url}/v1",
        env={},
        timeouts=Timeouts(answer=0.3),
        sleep=sleep,
        rng=lambda: 0.0,
    )

    turn = provider.complete(first_request())

    assert turn.text.startswith("The tests pass")
    assert len(wire.requests_to(CHAT)) == 2
    assert len(sleep.delays) == 1


def test_a_hung_provider_holds_the_call_no_longer_than_its_whole_limit(wire, sleep):
    """Five attempts of a 600 s wait each held a worker for about 50 minutes."""
    for _ in range(5):
        wire.reply(CHAT, json_body=load_fixture("deepseek_chat_text.json"), delay=3)
    provider = provider_for("openai:deepseek-chat", api_key=KEY, base_url=f"{wire.url}/v1", env={},
                            timeouts=Timeouts(answer=0.3, call=1.0), sleep=sleep, rng=lambda: 0.0)
    started = time.monotonic()
    with pytest.raises(Transient) as caught:
        provider.call(first_request())
    assert time.monotonic() - started < 1.0 + 0.3 + 1.0  # the limit, one answer's wait, and slack
    assert "no answer within 0.3 s" in caught.value.message
    assert "the call's limit is 1 s" in caught.value.message
    assert caught.value.record is not None and 1 <= caught.value.record.attempts < 5


@pytest.mark.parametrize(
    "case",
    overflow_cases(
        "openai",
        "deepseek",
        "vllm",
        "llama.cpp",
        "ollama",
        "openrouter",
        "litellm",
        "gemini",
        "mistral",
        "together",
        "github-copilot",
        "cliproxyapi",
    ),
)
def test_overflow_bodies_of_compatible_servers_raise_context_overflow_and_are_never_retried(
    wire, sleep, case
):
    wire.reply(CHAT, status=case["status"], text=case["body"])

    with pytest.raises(ContextOverflow) as caught:
        openai_for(wire, sleep).call(session_request())

    assert len(wire.requests_to(CHAT)) == 1
    assert sleep.delays == []
    assert caught.value.record.error_kind == "context_overflow"
    assert caught.value.record.attempts == 1


def test_a_bad_key_is_rejected_without_the_key_in_any_message(wire, sleep):
    # Short keys come back verbatim in OpenAI's answer; longer ones partly masked.
    wire.reply(
        CHAT,
        status=401,
        json_body={
            "error": {
                "message": f"Incorrect API key provided: {KEY}. You can find your API key at https://platform.openai.com/account/api-keys.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        },
    )

    with pytest.raises(Rejected) as caught:
        openai_for(wire, sleep).call(first_request())

    error = caught.value
    assert "Incorrect API key provided" in str(error)
    for text in (str(error), error.message, error.record.error, json.dumps(error.record.to_dict())):
        assert KEY not in text
        assert KEY[:12] not in text
    assert len(wire.requests_to(CHAT)) == 1


def test_connection_refused_on_the_primary_falls_back_to_the_next_model(wire, refusing, sleep):
    wire.reply(CHAT, json_body=load_fixture("deepseek_chat_text.json"))
    provider = provider_for(
        "openai:gpt-4.1",
        api_key=KEY,
        base_url=f"{refusing.url}/v1",
        fallbacks=["openai:deepseek-chat"],
        env={"OPENAI_BASE_URL": f"{wire.url}/v1", "OPENAI_API_KEY": "sk-fallback-key-000"},
        timeouts=Timeouts(connect=5, answer=5),
        sleep=sleep,
    )

    completion = provider.call(first_request())

    (sent,) = wire.requests_to(CHAT)
    assert sent.json["model"] == "deepseek-chat"
    # The per-agent key stays with the primary; the fallback uses the environment's.
    assert sent.headers["authorization"] == "Bearer sk-fallback-key-000"
    assert completion.record.fallback_used
    assert completion.record.model == "openai:deepseek-chat"
    assert completion.record.requested_model == "openai:gpt-4.1"
    assert completion.record.attempts == 2
    assert sleep.delays == []  # falling back needs no wait


def test_connection_refused_with_nowhere_to_fall_back_is_retried_then_reported(refusing, sleep):
    provider = provider_for(
        "openai:gpt-4.1",
        api_key=KEY,
        base_url=f"{refusing.url}/v1",
        env={},
        timeouts=Timeouts(connect=5, answer=5),
        sleep=sleep,
        rng=lambda: 0.5,
        policy=RetryPolicy(max_attempts=2, base_delay=1.0),
    )

    with pytest.raises(ConnectionFailed) as caught:
        provider.call(first_request())

    assert "Connection refused" in str(caught.value)
    assert sleep.delays == [0.75]
    assert caught.value.record.attempts == 2
    assert caught.value.record.error_kind == "connection_failed"


def test_closing_the_provider_releases_every_endpoints_connection_pool(wire, sleep):
    wire.reply(CHAT, json_body=load_fixture("deepseek_chat_text.json"))
    provider = openai_for(wire, sleep, fallbacks=[ModelEndpoint("openai:other", api_key="k2")])
    provider.complete(first_request())

    provider.close()

    assert all(endpoint._client.is_closed() for endpoint in provider.chain)


def test_a_200_whose_body_was_cut_off_is_retried_and_then_a_clear_failure(wire, sleep):
    """Issue 28: a provider answering 200 with a cut-off JSON body ended the session as
    "internal error: JSONDecodeError", never retried."""
    whole = json.dumps(load_fixture("openai_chat_tool_calls.json"))
    wire.reply(CHAT, text=whole[: len(whole) // 2])
    wire.reply(CHAT, text=whole)
    assert openai_for(wire, sleep).call(session_request()).turn.tool_calls  # the retry's answer
    wire.reply(CHAT, text=whole[:40])
    with pytest.raises(Transient, match="not complete JSON .* cut off"):
        openai_for(wire, sleep, policy=RetryPolicy(max_attempts=1)).call(session_request())
