"""The token budget of one session and the per-model calibration of estimates."""

from __future__ import annotations

from dataclasses import dataclass

CALIBRATION_MIN = 1.0
CALIBRATION_MAX = 2.5


@dataclass(frozen=True, slots=True)
class Budget:
    """Window arithmetic. All figures are tokens.

    trigger: a fold is due above it. ceiling: a fold is mandatory above it; the lower
    of 90% of the window and what is left after the requested output and a reserve.
    target: where a fold brings the projection back to. min_freed: a fold that frees
    less is not worth breaking the provider's prefix cache for. segment: above it, what
    cannot be folded away is too much for folds to be worth it (segments.py).

    The target is deep on purpose: a fold re-sends what it keeps as a cache write, so
    it pays back after about 11.5·kept/freed − 1 requests (economics.payback_requests).
    From the trigger (80%) down to 30% that is about 6 requests; down to 60% it was 33,
    longer than most sessions have left when they reach the trigger. Tuned on the
    replay of the development set (docs/replay.md).
    """

    window: int
    output_budget: int
    reserve: int = 1_024
    trigger_ratio: float = 0.80
    ceiling_ratio: float = 0.90
    target_ratio: float = 0.30
    min_freed_tokens: int = 16_000
    max_postponements: int = 2
    # A new segment starts, instead of a fold, once what no fold can remove passes this
    # share of the window: folds would then be frequent and small, each breaking the
    # cache for little.
    segment_ratio: float = 0.60
    # The working-set guard of optional folds (below the ceiling): they leave the current
    # text of a file the agent changed and touched within this many steps (0: off) ...
    working_set_steps: int = 10
    # ... and free at least this share of min_freed (0: off), as mandatory folds must.
    optional_min_freed: float = 1.0

    def __post_init__(self) -> None:
        if self.window <= 0 or self.output_budget < 0 or self.reserve < 0:
            raise ValueError("window must be positive; output budget and reserve not negative")
        if not 0 < self.target_ratio <= self.trigger_ratio <= 1:
            raise ValueError("need 0 < target_ratio <= trigger_ratio <= 1")
        if not 0 < self.segment_ratio <= 1:
            raise ValueError("need 0 < segment_ratio <= 1")
        if self.max_postponements < 0:
            raise ValueError("max_postponements must be 0 or more")
        if self.working_set_steps < 0 or self.optional_min_freed < 0:
            raise ValueError("working_set_steps and optional_min_freed must not be negative")

    @property
    def trigger(self) -> int:
        # A large output budget can push the ceiling below 80%: the ceiling wins.
        return min(int(self.window * self.trigger_ratio), self.ceiling)

    @property
    def ceiling(self) -> int:
        return max(0, min(int(self.window * self.ceiling_ratio), self.window - self.output_budget - self.reserve))

    @property
    def target(self) -> int:
        return min(int(self.window * self.target_ratio), self.trigger)

    @property
    def segment(self) -> int:
        return int(self.window * self.segment_ratio)

    @property
    def min_freed(self) -> int:
        # 16k suits a 128k window; a small window scales it down (12.5% of the window).
        return min(self.min_freed_tokens, self.window // 8)

    @property
    def optional_fold_min(self) -> int:
        """The least an optional fold frees: a smaller one breaks the cache for little,
        and folds what the agent may still use long before the window is short."""
        return round(self.min_freed * self.optional_min_freed)


@dataclass(slots=True)
class Calibration:
    """Ratio of provider-reported input tokens to our estimate, for one model.

    Learned on the first reported call after each fold (and at session start), the
    only calls whose request was projected without an anchor; kept within 1.0–2.5 so a
    bad sample can neither make the projection optimistic nor absurd.
    """

    model: str
    ratio: float = 1.0
    samples: int = 0

    # Later samples weigh 1/(n+1), capped so the ratio can still follow a model change.
    MAX_WEIGHT_SAMPLES = 10

    def learn(self, reported: int, estimated: int) -> float:
        if reported <= 0 or estimated <= 0:
            return self.ratio
        sample = min(CALIBRATION_MAX, max(CALIBRATION_MIN, reported / estimated))
        n = min(self.samples, self.MAX_WEIGHT_SAMPLES)
        self.ratio = (self.ratio * n + sample) / (n + 1)
        self.samples += 1
        return self.ratio
