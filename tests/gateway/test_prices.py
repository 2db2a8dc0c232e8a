"""The price table: lookup by model spec, cache multipliers per provider, and cost."""

from __future__ import annotations

from decimal import Decimal

import pytest

from observations.gateway.messages import Usage
from observations.gateway.prices import format_usd, price_for


@pytest.mark.parametrize(("spec", "provider", "row"), [
    ("anthropic:claude-sonnet-4-5", "anthropic", "anthropic:claude-sonnet-4"),
    ("anthropic:claude-sonnet-4-5-20250929", "anthropic", "anthropic:claude-sonnet-4"),
    ("anthropic:claude-opus-4-1", "anthropic", "anthropic:claude-opus-4-1"),
    ("anthropic:claude-opus-4-5", "anthropic", "anthropic:claude-opus-4-5"),
    ("anthropic:claude-haiku-4-5", "anthropic", "anthropic:claude-haiku-4-5"),
    ("openai:gpt-4.1", "openai", "openai:gpt-4.1"),
    ("openai:gpt-4.1-mini-2025-04-14", "openai", "openai:gpt-4.1-mini"),
    ("openai:gpt-4o-2024-08-06", "openai", "openai:gpt-4o"),
    ("openai:gpt-5", "openai", "openai:gpt-5"),
    ("openai:gpt-5-mini", "openai", "openai:gpt-5-mini"),
    ("openai:o3", "openai", "openai:o3"),
    ("openai:o4-mini", "openai", "openai:o4-mini"),
    ("openai:gemini-2.5-pro", "gemini", "gemini:gemini-2.5-pro"),
    ("openai:gemini-2.5-flash-lite", "gemini", "gemini:gemini-2.5-flash-lite"),
    ("openai:gemini-3-pro-preview", "gemini", "gemini:gemini-3-pro"),
    ("openai:models/gemini-2.5-flash", "gemini", "gemini:gemini-2.5-flash"),
    ("openai:deepseek-chat", "deepseek", "deepseek:deepseek-chat"),
])
def test_a_spec_finds_its_row_by_provider_and_the_longest_prefix(spec, provider, row):
    price = price_for(spec)
    assert price.known and price.provider == provider and price.source == row


@pytest.mark.parametrize("spec", [
    "openai:llama3", "anthropic:claude-future-9", "replay:demo-fix-median.json", "openai:gpt-4.10", "nonsense",
])
def test_an_unknown_model_has_no_price_and_no_cost(spec):
    price = price_for(spec)
    assert not price.known
    assert price.per_million() is None
    assert price.cost(Usage(input_tokens=1_000, output_tokens=100)) is None
    assert format_usd(price.cost(Usage(input_tokens=1))) == "unknown"


def test_anthropic_bills_cache_writes_at_1_25_and_reads_at_0_1_of_input():
    price = price_for("anthropic:claude-sonnet-4-5")
    assert (price.cache_read_multiplier, price.cache_write_multiplier) == (0.1, 1.25)
    usage = Usage(input_tokens=10_000, cached_input_tokens=6_000, cache_write_tokens=3_000, output_tokens=500)
    # 1,000 plain × $3 + 6,000 × $0.30 + 3,000 × $3.75 + 500 × $15, per million
    assert price.cost(usage) == Decimal("0.02355")


def test_openai_has_no_write_premium_and_its_own_cached_discount_per_family():
    gpt41, gpt5, gpt4o = price_for("openai:gpt-4.1"), price_for("openai:gpt-5"), price_for("openai:gpt-4o")
    assert gpt41.cache_write_multiplier == gpt5.cache_write_multiplier == 1.0
    assert (gpt41.cache_read_multiplier, gpt5.cache_read_multiplier, gpt4o.cache_read_multiplier) == (0.25, 0.1, 0.5)
    usage = Usage(input_tokens=100_000, cached_input_tokens=80_000, output_tokens=2_000)
    assert gpt41.cost(usage) == Decimal("0.096")  # 20k × $2 + 80k × $0.50 + 2k × $8


def test_reasoning_tokens_are_billed_once_as_part_of_the_output():
    price = price_for("openai:o3")
    plain = price.cost(Usage(input_tokens=1_000, output_tokens=5_000))
    assert price.cost(Usage(input_tokens=1_000, output_tokens=5_000, reasoning_tokens=4_000)) == plain


def test_a_compatible_server_has_no_cache_and_a_profile_can_price_it():
    price = price_for("openai:qwen3-coder")
    assert price.provider == "compatible" and (price.cache_read_multiplier, price.cache_write_multiplier) == (1, 1)
    priced = price.with_overrides(input=Decimal("0.5"), output=Decimal("2"), cached_input=None, cache_write=None)
    assert priced.known and priced.source == "profile"
    assert priced.cost(Usage(input_tokens=2_000_000, cached_input_tokens=1_000_000, output_tokens=1_000_000)) == \
        Decimal("3")  # a reported cached count is plain input without a cache


def test_an_override_replaces_only_the_prices_it_gives():
    price = price_for("anthropic:claude-sonnet-4-5").with_overrides(input=Decimal("2"), output=None)
    assert price.per_million() == {"input": Decimal("2"), "cached_input": Decimal("0.2"),
                                   "cache_write": Decimal("2.50"), "output": Decimal("15")}


def test_counts_that_do_not_add_up_are_clamped_not_billed_negative():
    price = price_for("anthropic:claude-haiku-4-5")
    assert price.cost(Usage(input_tokens=100, cached_input_tokens=500, cache_write_tokens=500)) == \
        Decimal("0.00001")  # 100 cached tokens at $0.10


def test_amounts_are_shown_with_cents_or_four_decimals():
    assert format_usd(Decimal("12.345")) == "$12.35"
    assert format_usd(Decimal("0.0123456")) == "$0.0123"
    assert format_usd(Decimal(0)) == "$0.0000"
