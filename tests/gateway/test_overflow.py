"""Overflow detection on real error bodies of OpenAI-compatible and Anthropic servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from observations.gateway.overflow import decode_escapes, is_context_overflow, overflow_reason

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "providers" / "error_bodies.json"
CASES = json.loads(FIXTURE.read_text(encoding="utf-8"))["cases"]


def cases(*, overflow: bool):
    return [pytest.param(c, id=c["name"]) for c in CASES if c["overflow"] is overflow]


@pytest.mark.parametrize("case", cases(overflow=True))
def test_overflow_bodies_are_recognised(case):
    assert is_context_overflow(status=case["status"], body=case["body"])


@pytest.mark.parametrize("case", cases(overflow=False))
def test_other_errors_are_not_overflows(case):
    assert not is_context_overflow(status=case["status"], body=case["body"])


@pytest.mark.parametrize(
    "case", [c for c in cases(overflow=True) if c.values[0]["status"] not in (413, None)]
)
def test_overflow_bodies_are_recognised_from_the_body_alone_when_it_is_json(case):
    # Proxies lose the status; the body must still be enough.
    try:
        json.loads(case["body"])
    except ValueError:
        pytest.skip("not a JSON body")
    assert is_context_overflow(status=None, body=case["body"])


def test_the_fixture_holds_the_required_variety():
    names = {c["name"] for c in CASES}
    providers = {c["provider"] for c in CASES if c["overflow"]}
    assert {
        "anthropic",
        "openai",
        "vllm",
        "llama.cpp",
        "ollama",
        "deepseek",
        "openrouter",
        "gemini",
    } <= providers
    assert "copilot_go_escaped_prompt_too_long" in names
    assert "\\u003e" in next(
        c["body"] for c in CASES if c["name"] == "copilot_go_escaped_prompt_too_long"
    )
    assert sum(not c["overflow"] for c in CASES) >= 10


def test_structured_codes_win_before_any_text():
    body = {
        "error": {
            "message": "Bad request.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }

    assert overflow_reason(status=400, body=body) == "code context_length_exceeded"
    assert (
        overflow_reason(status=400, code="exceed_context_size_error", body=None)
        == "code exceed_context_size_error"
    )


def test_status_413_is_an_overflow_whatever_the_body():
    assert overflow_reason(status=413, body="<html>Request Entity Too Large</html>") == "status 413"
    assert overflow_reason(status=413, body=None) == "status 413"


def test_a_429_is_never_an_overflow_even_when_it_talks_about_size():
    assert not is_context_overflow(
        status=429, body="prompt is too long: 300000 tokens > 200000 maximum"
    )


def test_a_rate_limit_code_vetoes_size_wording_when_the_status_is_lost():
    body = {
        "error": {
            "code": "rate_limit_exceeded",
            "message": "This model's maximum context length is shared per minute",
        }
    }

    assert not is_context_overflow(body=body)


def test_go_escaped_greater_than_is_decoded_before_matching():
    # Only the `N tokens > M maximum` rule can match this text, and only once \u003e is `>`.
    escaped = '{"error":{"message":"request rejected: 230024 tokens \\u003e 200000 maximum"}}'
    raw_text = "request rejected: 230024 tokens \\u003e 200000 maximum"

    assert overflow_reason(body=escaped) == "text: tokens over maximum"
    assert overflow_reason(body=raw_text) == "text: tokens over maximum"


def test_escapes_are_decoded_through_several_levels_of_encoding():
    twice = json.dumps(json.dumps({"message": "a \u003e b"}))

    assert decode_escapes("a \\u003e b") == "a > b"
    assert decode_escapes("\\\\u003e") == ">"
    assert "a > b" in decode_escapes(twice)


def test_nothing_is_not_an_overflow():
    assert not is_context_overflow()
    assert not is_context_overflow(status=400, code="invalid_request_error", body="")
