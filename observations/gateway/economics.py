"""What a fold costs and what it saves: cache prices and the work still ahead.

Providers cache the request prefix. Relative to an uncached input token, a cached one
costs ``cache_read`` and a newly cached one ``cache_write``. A fold rewrites what it
keeps (a cache write instead of a read) and from then on every request reads the
tokens it freed no more. Whether that pays depends on how many requests are left,
which nobody knows; ``LengthPrior`` estimates it from how long sessions like this one
ran before.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from observations.gateway.prices import ModelPrice

# Below this many finished sessions longer than the current one, the prior falls back
# to "as many steps again as so far" (a session that has run k steps is about as
# likely as not to run k more).
MIN_SAMPLES = 8


@dataclass(frozen=True, slots=True)
class CacheEconomics:
    """Prices relative to an uncached input token (prices.py has the table)."""

    cache_read: float = 0.10
    cache_write: float = 1.25

    def __post_init__(self) -> None:
        if not 0 <= self.cache_read <= 1 or self.cache_write < self.cache_read:
            raise ValueError("need 0 <= cache_read <= 1 and cache_write >= cache_read")

    @classmethod
    def of(cls, price: ModelPrice) -> CacheEconomics:
        """What a model's prices in the table (or an agent profile's own) say a fold
        costs. A recorded (``replay:``) model has no cache of its own: it is taken to
        cache like the provider the demo plays, Anthropic."""
        if price.provider == "replay":
            return cls()
        read = price.cache_read_multiplier
        if not 0 <= read <= 1 or price.cache_write_multiplier < read:
            # Prices saved before they were checked: fold as the provider's cache does.
            return cls(cache_read=float(price.cache.read), cache_write=float(price.cache.write))
        return cls(cache_read=read, cache_write=price.cache_write_multiplier)

    @property
    def rewrite_premium(self) -> float:
        """The extra a token costs when it is written to the cache instead of read."""
        return self.cache_write - self.cache_read

    def payback_requests(self, rewritten: float, freed: float) -> float:
        """Later requests a fold needs to pay for itself: it re-sends ``rewritten``
        tokens as a cache write instead of a read, and every later request reads
        ``freed`` tokens fewer (Anthropic's prices: 11.5·P/S − 1)."""
        if freed <= 0 or self.cache_read <= 0:
            return float("inf")
        return self.rewrite_premium * rewritten / (self.cache_read * freed) - 1


@dataclass(frozen=True, slots=True)
class LengthPrior:
    """Lengths (model calls) of finished sessions of the same agent profile and model."""

    lengths: tuple[int, ...] = ()  # sorted

    @classmethod
    def of(cls, lengths) -> LengthPrior:
        return cls(tuple(sorted(int(n) for n in lengths if n > 0)))

    def remaining(self, step: int) -> float:
        """Requests still to come after ``step`` requests, as likely more as fewer."""
        longer = self.lengths[bisect_right(self.lengths, step):]
        fallback = float(max(step, 1))
        if not longer:
            return fallback
        # The median, not the mean: a few very long sessions would otherwise promise
        # every session a long future and make late folds look worth it.
        observed = longer[len(longer) // 2] - step
        if len(longer) >= MIN_SAMPLES:
            return observed
        # Few comparable sessions: lean on the fallback in proportion.
        weight = len(longer) / MIN_SAMPLES
        return weight * observed + (1 - weight) * fallback
