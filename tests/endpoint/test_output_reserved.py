"""A client's ``max_tokens`` in a session: honoured up to the model's own limit and half
the window, and reserved of the window by the session's budget (its ceiling moves)."""

from __future__ import annotations

import pytest

from agents.providers.output_limits import output_limit
from endpoint.feed import output_reserved
from observations.gateway.budget import Budget


@pytest.mark.parametrize(("model", "limit"), [
    ("anthropic:claude-sonnet-4-5", 64_000),
    ("claude-sonnet-4-5-20250929", 64_000),
    ("anthropic:claude-opus-4-1-20250805", 32_000),
    ("anthropic:claude-opus-4-5", 64_000),
    ("anthropic:claude-3-5-haiku-latest", 8_192),
    ("openai:gpt-4.1-mini", 32_768),
    ("openai:gpt-4o", 16_384),
    ("openai:gpt-5.1-codex", 128_000),
    ("openai:o3-mini", 100_000),
    ("openai:gpt-4", None),  # not gpt-4o's, nor gpt-4.1's
    ("local:qwen3-coder", None),
])
def test_a_models_own_output_limit_by_its_family(model, limit):
    assert output_limit(model) == limit


@pytest.mark.parametrize(("asked", "model", "window", "reserved"), [
    (0, "anthropic:claude-sonnet-4-5", 200_000, 8_000),  # none asked: the agent's output budget
    (32_000, "anthropic:claude-sonnet-4-5", 200_000, 32_000),  # Claude Code's ask, as asked
    (100_000, "anthropic:claude-sonnet-4-5", 200_000, 64_000),  # past the model's limit
    (64_000, "anthropic:claude-sonnet-4-5", 100_000, 50_000),  # past half the window
    (500, "openai:gpt-4.1", 128_000, 500),  # a smaller one is the client's
    (90_000, "local:unknown", 128_000, 64_000),  # no known limit: half the window at most
])
def test_what_a_step_reserves_for_the_reply(asked, model, window, reserved):
    assert output_reserved(asked, model=model, window=window, budget=8_000) == reserved


def test_the_ceiling_reserves_what_the_request_asks_for():
    asked = output_reserved(32_000, model="anthropic:claude-sonnet-4-5", window=200_000, budget=8_000)
    assert Budget(window=200_000, output_budget=asked).ceiling == 200_000 - 32_000 - 1_024
    assert Budget(window=200_000, output_budget=8_000).ceiling == 180_000
