"""How long a call of a model may take: an agent profile's three limits, in seconds."""

from __future__ import annotations

from dataclasses import dataclass

import httpx2


@dataclass(frozen=True, slots=True)
class Timeouts:
    """How long a call of a model may take, in seconds: to connect, for one request's
    answer to start arriving (the SDKs' read timeout: a non-streamed answer arrives whole,
    so this bounds its generation), and for the whole call, its retries included."""

    connect: float = 10.0
    answer: float = 300.0
    call: float = 900.0

    def __post_init__(self) -> None:
        if min(self.connect, self.answer, self.call) <= 0:
            raise ValueError("timeouts must be positive")

    def for_sdk(self) -> httpx2.Timeout:
        return httpx2.Timeout(self.answer, connect=self.connect)


DEFAULT_TIMEOUTS = Timeouts()
