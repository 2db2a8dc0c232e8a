"""How far the token estimator is from the provider's own counts.

Only sources that keep the full history and record the provider's input count per
call can serve: there the reported ``prompt_tokens`` of call k is the true size of the
very request the `none` replay rebuilds, so estimate and truth describe the same text.
mini-swe-agent is such a source; SWE-agent masks old outputs and OpenHands' counts
include its own prompt extensions, so they are left out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

FULL_HISTORY_SOURCES = frozenset({"mini-swe-agent"})


@dataclass(frozen=True, slots=True)
class EstimatorError:
    runs: int
    calls: int
    median_abs_pct: float  # median of |estimate − reported| / reported, in %
    p95_abs_pct: float
    median_pct: float  # signed: below 0 the estimate is low

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EstimatorError:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})

    def describe(self) -> str:
        return (
            f"token estimate vs provider-reported input ({self.calls:,} calls of {self.runs} "
            f"full-history runs): median error {self.median_abs_pct:.1f}%, "
            f"p95 {self.p95_abs_pct:.1f}%, bias {self.median_pct:+.1f}%"
        )


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile of non-empty ``values``."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def estimator_error(runs: Iterable[list[tuple[int, int]]]) -> EstimatorError | None:
    """``runs``: per run, (estimate, reported) input tokens of each call."""
    errors: list[float] = []
    count = 0
    for pairs in runs:
        usable = [(e, r) for e, r in pairs if r > 0]
        if usable:
            count += 1
            errors.extend(100.0 * (e - r) / r for e, r in usable)
    if not errors:
        return None
    absolute = [abs(e) for e in errors]
    return EstimatorError(
        runs=count,
        calls=len(errors),
        median_abs_pct=round(statistics.median(absolute), 2),
        p95_abs_pct=round(percentile(absolute, 0.95), 2),
        median_pct=round(statistics.median(errors), 2),
    )
