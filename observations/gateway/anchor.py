"""Token anchoring: the projection of a request is the provider's last reported input
count plus what was added since (estimated, calibrated); with no report yet, or after a
fold changed what the count was of, the calibrated estimate of the whole request."""

from __future__ import annotations

from observations.gateway.budget import Calibration


class TokenAnchor:
    def __init__(self, calibration: Calibration) -> None:
        self.calibration = calibration
        self.reported: int | None = None  # the provider's count of the request last sent
        self.estimate_at: int = 0  # our raw estimate of that same request
        self.sent_estimate: int = 0  # our raw estimate of the request being sent
        self.learn_on_next_usage = False  # the next count teaches the calibration

    @property
    def anchored(self) -> bool:
        return self.reported is not None

    def projection(self, estimate: int) -> int:
        """Projected input tokens of a request whose raw estimate is ``estimate``."""
        ratio = self.calibration.ratio
        if self.reported is not None:
            return self.reported + round((estimate - self.estimate_at) * ratio)
        return round(estimate * ratio)

    def sent(self, estimate: int) -> bool:
        """A request of raw estimate ``estimate`` leaves; whether its projection was anchored."""
        anchored = self.anchored
        if not anchored:
            self.learn_on_next_usage = True
        self.sent_estimate = estimate
        return anchored

    def record_usage(self, reported_input_tokens: int, *, learn: bool = True) -> None:
        """The provider reported the input size of the request just sent. ``learn=False``
        when another model than the calibrated one answered (a fallback): its count
        anchors the projection but says nothing about this model's ratio."""
        if self.learn_on_next_usage and learn:
            self.calibration.learn(reported_input_tokens, self.sent_estimate)
        self.learn_on_next_usage = False
        self.reported = reported_input_tokens
        self.estimate_at = self.sent_estimate

    def drop(self) -> None:
        """The request changed under the count (a fold, a new segment): it no longer applies."""
        self.reported = None
