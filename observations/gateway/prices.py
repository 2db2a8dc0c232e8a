"""What a model call costs: one price table, per provider and per model.

Prices are the providers' published list prices in USD per million tokens (no batch,
priority, regional or long-context surcharges). A provider's prompt cache is described
by two multipliers of the input price, what a cache read and a cache write cost
relative to an uncached input token; a model's own published cached-input price wins
over the multiplier where one is listed.

Usage arrives as the providers report it (observations.gateway.messages.Usage):
``input_tokens`` counts every input token, cached and newly cached included;
``reasoning_tokens`` are part of ``output_tokens`` and billed as output, so they are
never added twice. A model the table does not know has no price: ``cost()`` returns
None and callers show "unknown", never a guess.

The runtime prices every ProviderCall with this table (overridable per agent profile)
and the replay evaluator's fold economics read the same multipliers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal

from observations.gateway.messages import Usage
from observations.gateway.model_spec import ModelSpecError, parse_model_spec

MILLION = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class CachePricing:
    """A provider's prompt cache, as multipliers of the uncached input price."""

    read: Decimal  # a cached input token
    write: Decimal  # an input token newly written to the cache
    automatic: bool  # caches on its own (no breakpoints, no write premium)


# Anthropic: cache writes (5-minute entries, what the providers module asks for) cost
# 1.25× input, cache hits 0.1× (platform.claude.com/docs/en/about-claude/pricing,
# "Model pricing" and "Prompt caching"; confirmed through the search index).
ANTHROPIC = CachePricing(read=Decimal("0.1"), write=Decimal("1.25"), automatic=False)
# OpenAI: automatic caching of prefixes ≥ 1,024 tokens, no write premium; the
# cached-input discount differs by family (GPT-5: 90%, GPT-4.1: 75%, GPT-4o and the
# o-series: 50%), so every OpenAI model below lists its own cached price and this 0.5
# only applies to a priced override that omits it.
OPENAI = CachePricing(read=Decimal("0.5"), write=Decimal(1), automatic=True)
# Gemini (OpenAI-compatible endpoint): implicit caching, no write premium; 2.5 and 3
# models bill cached input at 10% (ai.google.dev/gemini-api/docs/pricing).
GEMINI = CachePricing(read=Decimal("0.1"), write=Decimal(1), automatic=True)
# DeepSeek: automatic context caching on disk, no write premium
# (api-docs.deepseek.com/quick_start/pricing-details-usd).
DEEPSEEK = CachePricing(read=Decimal("0.25"), write=Decimal(1), automatic=True)
# Any other OpenAI-compatible server (vLLM, Ollama, llama.cpp): nothing is billed as
# cached; a cached count it reports is priced as plain input.
NO_CACHE = CachePricing(read=Decimal(1), write=Decimal(1), automatic=False)


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """The price of one model, USD per million tokens; None where unknown."""

    spec: str  # the model spec it was looked up for
    provider: str  # anthropic, openai, gemini, deepseek, compatible, replay
    cache: CachePricing
    input: Decimal | None = None
    output: Decimal | None = None
    cached_input: Decimal | None = None  # None: input × cache.read
    cache_write: Decimal | None = None  # None: input × cache.write
    source: str = ""  # which table row (or "profile") gave it

    @property
    def known(self) -> bool:
        return self.input is not None and self.output is not None

    @property
    def cache_read_multiplier(self) -> float:
        """A cached input token's price relative to an uncached one."""
        if self.input and self.cached_input is not None:
            return float(self.cached_input / self.input)
        return float(self.cache.read)

    @property
    def cache_write_multiplier(self) -> float:
        """A newly cached input token's price relative to an uncached one."""
        if self.input and self.cache_write is not None:
            return float(self.cache_write / self.input)
        return float(self.cache.write)

    def per_million(self) -> dict[str, Decimal] | None:
        """The four prices that apply, with the multipliers filled in; None if unknown."""
        if not self.known:
            return None
        assert self.input is not None and self.output is not None
        return {
            "input": self.input,
            "cached_input": self.cached_input if self.cached_input is not None else self.input * self.cache.read,
            "cache_write": self.cache_write if self.cache_write is not None else self.input * self.cache.write,
            "output": self.output,
        }

    def cost(self, usage: Usage) -> Decimal | None:
        """USD for one call, or None when the model has no price."""
        prices = self.per_million()
        if prices is None:
            return None
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        written = min(usage.cache_write_tokens, usage.input_tokens - cached)
        plain = usage.input_tokens - cached - written
        total = (
            plain * prices["input"]
            + cached * prices["cached_input"]
            + written * prices["cache_write"]
            + usage.output_tokens * prices["output"]
        )
        return total / MILLION

    def with_overrides(self, **overrides: Decimal | None) -> ModelPrice:
        """This price with some of input/output/cached_input/cache_write replaced
        (an agent profile's own prices); None leaves a price as it is."""
        given = {k: Decimal(v) for k, v in overrides.items() if v is not None}
        if not given:
            return self
        return replace(self, source="profile", **given)


def _d(value: str) -> Decimal:
    return Decimal(value)


# (provider, name prefix) → input, cached input, output; USD per million tokens.
# A longer prefix wins: "gpt-4.1-mini" before "gpt-4.1". Dated snapshots
# ("claude-sonnet-4-5-20250929", "gpt-4o-2024-08-06") match their family.
_ROWS: tuple[tuple[str, str, str, str | None, str], ...] = (
    # Anthropic (platform.claude.com/docs/en/about-claude/pricing): cache hits are
    # 0.1× and 5-minute writes 1.25× of input for every model listed.
    ("anthropic", "claude-opus-5", "5", None, "25"),
    ("anthropic", "claude-opus-4-8", "5", None, "25"),
    ("anthropic", "claude-opus-4-7", "5", None, "25"),
    ("anthropic", "claude-opus-4-6", "5", None, "25"),
    ("anthropic", "claude-opus-4-5", "5", None, "25"),
    ("anthropic", "claude-opus-4-1", "15", None, "75"),
    ("anthropic", "claude-opus-4", "15", None, "75"),
    ("anthropic", "claude-sonnet-4", "3", None, "15"),  # Sonnet 4, 4.5
    ("anthropic", "claude-3-7-sonnet", "3", None, "15"),
    ("anthropic", "claude-3-5-sonnet", "3", None, "15"),
    ("anthropic", "claude-haiku-4-5", "1", None, "5"),
    ("anthropic", "claude-3-5-haiku", "0.80", None, "4"),
    # OpenAI (developers.openai.com/api/docs/pricing, standard tier). The search index
    # confirmed the cached-input discounts per family and o1's $15/$7.50/$60; the other
    # rows are the list prices as published when this table was written, not each
    # confirmed again here.
    ("openai", "gpt-5-nano", "0.05", "0.005", "0.40"),
    ("openai", "gpt-5-mini", "0.25", "0.025", "2"),
    ("openai", "gpt-5", "1.25", "0.125", "10"),
    ("openai", "gpt-4.1-nano", "0.10", "0.025", "0.40"),
    ("openai", "gpt-4.1-mini", "0.40", "0.10", "1.60"),
    ("openai", "gpt-4.1", "2", "0.50", "8"),
    ("openai", "gpt-4o-mini", "0.15", "0.075", "0.60"),
    ("openai", "gpt-4o", "2.50", "1.25", "10"),
    ("openai", "o4-mini", "1.10", "0.275", "4.40"),
    ("openai", "o3-mini", "1.10", "0.55", "4.40"),
    ("openai", "o3", "2", "0.50", "8"),
    ("openai", "o1-mini", "1.10", "0.55", "4.40"),
    ("openai", "o1", "15", "7.50", "60"),
    # Gemini (ai.google.dev/gemini-api/docs/pricing), prompts up to 200k tokens.
    # 2.5 Pro's $1.25/$10 was confirmed through the search index; the Flash and 3.x
    # rows are the published prices as known when written, not confirmed again here.
    ("gemini", "gemini-3-pro", "2", "0.20", "12"),
    ("gemini", "gemini-3-flash", "0.50", "0.05", "3"),
    ("gemini", "gemini-2.5-pro", "1.25", "0.125", "10"),
    ("gemini", "gemini-2.5-flash-lite", "0.10", "0.01", "0.40"),
    ("gemini", "gemini-2.5-flash", "0.30", "0.03", "2.50"),
    # DeepSeek (api-docs.deepseek.com/quick_start/pricing-details-usd, as the search
    # index holds it): cache hit / cache miss / output.
    ("deepseek", "deepseek-reasoner", "0.55", "0.14", "2.19"),
    ("deepseek", "deepseek-chat", "0.27", "0.07", "1.10"),
)

_CACHE = {"anthropic": ANTHROPIC, "openai": OPENAI, "gemini": GEMINI, "deepseek": DEEPSEEK}
_DATED = re.compile(r"(-\d{8}|-\d{4}-\d{2}-\d{2}|-latest|-preview(-[\w-]+)?)$")


def _family(name: str) -> str | None:
    """The provider whose models are named like ``name`` (an OpenAI-compatible spec may
    name a Gemini or DeepSeek model), or None."""
    for provider in ("gemini", "deepseek"):
        if name.startswith(provider):
            return provider
    if name.startswith(("gpt-", "o1", "o3", "o4")):
        return "openai"
    if name.startswith("claude"):
        return "anthropic"
    return None


def price_for(spec: str) -> ModelPrice:
    """The list price of ``spec`` (``anthropic:claude-sonnet-4-5``, ``openai:gpt-4.1``,
    ``openai:deepseek-chat`` …). Unknown models get a ModelPrice with ``known`` False;
    its cache multipliers are the provider's (or none, for a compatible server)."""
    try:
        parsed = parse_model_spec(spec)
        provider, name = parsed.kind, parsed.name
    except ModelSpecError:  # a bare model name, priced by its family
        provider, name = "", spec
    name = name.strip().lower().rsplit("/", 1)[-1]  # "models/gemini-2.5-pro", "openrouter/…"
    if provider == "replay":
        return ModelPrice(spec=spec, provider="replay", cache=NO_CACHE)
    family = _family(name)
    if provider == "anthropic" or (provider in ("openai", "") and family is not None):
        provider = family or provider
    else:
        provider = "compatible"
    cache = _CACHE.get(provider, NO_CACHE)
    stripped = _DATED.sub("", name)
    best: tuple[str, str, str | None, str] | None = None
    for row_provider, prefix, price_in, price_cached, price_out in _ROWS:
        if row_provider != provider:
            continue
        if (stripped == prefix or stripped.startswith(prefix + "-") or stripped.startswith(prefix + ".")) and (
            best is None or len(prefix) > len(best[0])
        ):
            best = (prefix, price_in, price_cached, price_out)
    if best is None:
        return ModelPrice(spec=spec, provider=provider, cache=cache)
    prefix, price_in, price_cached, price_out = best
    return ModelPrice(
        spec=spec, provider=provider, cache=cache, input=_d(price_in), output=_d(price_out),
        cached_input=_d(price_cached) if price_cached is not None else None, source=f"{provider}:{prefix}",
    )


def format_usd(amount: Decimal | None) -> str:
    """``$0.0123``, ``$12.35``, or ``unknown``: small amounts keep four decimals."""
    if amount is None:
        return "unknown"
    places = Decimal("0.01") if abs(amount) >= 1 else Decimal("0.0001")
    return f"${amount.quantize(places, rounding=ROUND_HALF_UP):,}"
