"""Retry, backoff and fallback policy over scripted in-process providers."""

from __future__ import annotations

import pytest

from agents.providers import (
    ConnectionFailed,
    ContextOverflow,
    Rejected,
    ResilientProvider,
    RetryPolicy,
    Transient,
)
from agents.providers.errors import display_url, retry_after_seconds
from observations.gateway.messages import ModelTurn, Usage
from tests.agents.providers.requests import first_request


class Scripted:
    """A provider that raises or answers from a script, one entry per call."""

    def __init__(self, spec, *script):
        self.spec = spec
        self.script = list(script)
        self.calls = 0

    def complete(self, request):
        self.calls += 1
        outcome = self.script.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


TURN = ModelTurn(
    text="done",
    usage=Usage(input_tokens=100, output_tokens=5),
    latency_ms=42,
    stop_reason="end_turn",
)


def resilient(*chain, sleep, policy=None):
    return ResilientProvider(
        chain,
        policy=policy or RetryPolicy(max_attempts=4, base_delay=1.0, max_delay=3.0),
        sleep=sleep,
        rng=lambda: 1.0,
    )


def test_backoff_doubles_up_to_the_ceiling_with_jitter_in_the_upper_half():
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0)

    assert [policy.backoff(n, lambda: 0.0) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 2.5]
    assert [policy.backoff(n, lambda: 1.0) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]


def test_an_overflow_is_raised_at_once_without_retry_or_fallback(sleep):
    primary = Scripted(
        "openai:a", ContextOverflow("too long", reason="code context_length_exceeded")
    )
    fallback = Scripted("openai:b", TURN)

    with pytest.raises(ContextOverflow):
        resilient(primary, fallback, sleep=sleep).call(first_request())

    assert (primary.calls, fallback.calls, sleep.delays) == (1, 0, [])


def test_a_rejection_is_raised_at_once_with_its_record(sleep):
    primary = Scripted("openai:a", Rejected("openai:a: HTTP 400: bad tool schema", status=400))

    with pytest.raises(Rejected) as caught:
        resilient(primary, sleep=sleep).call(first_request())

    record = caught.value.record
    assert (record.attempts, record.error_kind, record.error) == (
        1,
        "rejected",
        "openai:a: HTTP 400: bad tool schema",
    )
    assert sleep.delays == []


def test_transient_errors_are_retried_with_backoff_until_the_turn_arrives(sleep):
    primary = Scripted("openai:a", Transient("503"), Transient("503"), TURN)

    completion = resilient(primary, sleep=sleep).call(first_request())

    assert completion.turn == TURN
    assert sleep.delays == [1.0, 2.0]
    assert completion.record.attempts == 3
    assert completion.record.latency_ms == 42
    assert completion.record.stop_reason == "end_turn"


def test_transient_errors_do_not_fall_back_and_stop_at_the_attempt_bound(sleep):
    primary = Scripted("openai:a", *[Transient("500")] * 4)
    fallback = Scripted("openai:b", TURN)

    with pytest.raises(Transient):
        resilient(primary, fallback, sleep=sleep).call(first_request())

    assert (primary.calls, fallback.calls) == (4, 0)
    assert sleep.delays == [1.0, 2.0, 3.0]


def test_connection_failures_walk_the_fallback_chain(sleep):
    chain = (
        Scripted("openai:a", ConnectionFailed("refused")),
        Scripted("anthropic:b", ConnectionFailed("refused")),
        Scripted("replay:c.json", TURN),
    )

    completion = resilient(*chain, sleep=sleep).call(first_request())

    assert completion.record.model == "replay:c.json"
    assert completion.record.requested_model == "openai:a"
    assert completion.record.fallback_used and completion.record.attempts == 3
    assert sleep.delays == []


def test_a_fallback_answering_with_an_overflow_still_ends_the_call(sleep):
    chain = (
        Scripted("openai:a", ConnectionFailed("refused")),
        Scripted("openai:b", ContextOverflow("too long")),
    )

    with pytest.raises(ContextOverflow) as caught:
        resilient(*chain, sleep=sleep).call(first_request())

    assert caught.value.record.model == "openai:b"
    assert caught.value.record.fallback_used


def test_a_turn_without_usage_is_recorded_as_unreported(sleep):
    primary = Scripted("openai:a", ModelTurn(text="hi"))

    record = resilient(primary, sleep=sleep).call(first_request()).record

    assert not record.usage_reported
    assert record.input_tokens == 0


def test_complete_returns_only_the_turn(sleep):
    assert resilient(Scripted("openai:a", TURN), sleep=sleep).complete(first_request()) == TURN


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "12"}, 12.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:30 GMT"}, 30.0),
        ({"Retry-After": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_headers_are_read_in_every_form(headers, seconds):
    now = 1445412480.0  # Wed, 21 Oct 2015 07:28:00 GMT

    assert retry_after_seconds(headers, now=now) == seconds


def test_a_policy_needs_at_least_one_attempt():
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


def test_credentials_in_a_base_url_never_reach_a_message():
    assert display_url("http://user:s3cret@vllm.internal:8000/v1") == "http://vllm.internal:8000/v1"
    assert display_url("http://127.0.0.1:11434/v1") == "http://127.0.0.1:11434/v1"
