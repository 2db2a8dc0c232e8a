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


@dataclass(frozen=True, slots=True)
class RequestCost:
    uncached: int
    cache_read: int
    cache_write: int
