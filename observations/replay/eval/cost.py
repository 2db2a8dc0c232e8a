"""The cost index: what a run's requests would cost with provider prompt caching.

Modelled on Anthropic's prompt caching with a cache breakpoint at the end of every
request: the part of a request that repeats the previous request's leading messages
byte for byte is read from the cache, the rest is written to it. A request below the
minimum cacheable size is neither read nor written (the provider ignores the
breakpoint), and a request cannot read what a too-small predecessor never wrote.

Units are uncached input tokens: uncached × 1.0 + cache-read × 0.1 + cache-write ×
1.25 (Anthropic's published multipliers) + output × the output weight. Output tokens
are the same for every policy (the recorded actions are replayed), so they only damp
the ratios between policies, the way they damp a real bill.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from observations.gateway.economics import CacheEconomics
from observations.gateway.prices import ModelPrice, price_for

# Claude Sonnet 4 / Opus list prices: output costs 5× uncached input ($15 vs $3 per
# million); GPT-4.1 is 4×, Gemini 3 Pro 6×. 5 is the middle of that range.
DEFAULT_OUTPUT_WEIGHT = 5.0
MIN_CACHEABLE_TOKENS = 1_024  # Anthropic's minimum for Sonnet and Opus


@dataclass(frozen=True, slots=True)
class CostModel:
    cache_read: float = 0.1
    cache_write: float = 1.25
    output: float = DEFAULT_OUTPUT_WEIGHT
    min_cacheable: int = MIN_CACHEABLE_TOKENS

    def __post_init__(self) -> None:
        if min(self.cache_read, self.cache_write, self.output) < 0 or self.min_cacheable < 0:
            raise ValueError("prices and the minimum cacheable size must not be negative")

    def split(self, sent: int, shared_prefix: int, previous_sent: int) -> RequestCost:
        """How one request of ``sent`` tokens is billed, given the tokens it shares
        with the previous request (``previous_sent`` tokens; 0 for the first)."""
        if sent < self.min_cacheable:
            return RequestCost(uncached=sent, cache_read=0, cache_write=0)
        read = min(shared_prefix, sent) if previous_sent >= self.min_cacheable else 0
        return RequestCost(uncached=0, cache_read=read, cache_write=sent - read)

    def input_cost(self, cost: RequestCost) -> float:
        return (
            cost.uncached + self.cache_read * cost.cache_read + self.cache_write * cost.cache_write
        )

    def to_json(self) -> dict[str, float | int]:
        return asdict(self)

    @property
    def economics(self) -> CacheEconomics:
        """What the gateway's fold decisions should assume under these prices."""
        return CacheEconomics(cache_read=self.cache_read, cache_write=self.cache_write)

    @classmethod
    def of(cls, price: ModelPrice, *, default_output: float = DEFAULT_OUTPUT_WEIGHT) -> CostModel:
        """A model's published prices (observations.gateway.prices), relative to its
        uncached input price."""
        output = float(price.output / price.input) if price.known and price.input else default_output
        return cls(cache_read=price.cache_read_multiplier, cache_write=price.cache_write_multiplier, output=output)


# `replay --prices`: one representative model per provider, priced from the one table.
PRICE_MODELS: dict[str, str] = {
    "anthropic": "anthropic:claude-sonnet-4-5",  # cache read 0.1×, write 1.25×, output 5×
    "openai": "openai:gpt-4.1",  # automatic caching: read 0.25×, no write premium, output 4×
    "gemini": "openai:gemini-3-pro",  # implicit caching: read 0.1×, no write premium, output 6×
    "uncached": "openai:local-model",  # an OpenAI-compatible server that caches nothing
}
PRICES: dict[str, CostModel] = {name: CostModel.of(price_for(spec)) for name, spec in PRICE_MODELS.items()}


@dataclass(frozen=True, slots=True)
class RequestCost:
    uncached: int
    cache_read: int
    cache_write: int
