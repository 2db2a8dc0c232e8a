"""How a session's results are served and stubbed. Production serves an unchanged re-read
still in the request as a short note, lets the agent's own bodies leave as payload
receipts, stubs an evicted result with a receipt that names ``recall``, and starts new
segments. A policy's row (policies.POLICIES) says which of these its sessions get; the
replay's comparisons turn the others (observations/replay/eval/baselines.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from observations.gateway.transcript import FileRange, Observation


class ReadGate(Protocol):
    """Reads refused before the session's ledger is asked (the room-wide "already read"
    rule of the gateway that deadlocked, kept for comparison)."""

    def denies(self, rng: FileRange) -> bool: ...

    def saw(self, rng: FileRange) -> None: ...

    def denial(self, obs: Observation) -> str: ...


@dataclass(frozen=True, slots=True)
class Serving:
    notes: bool = True  # an unchanged re-read still in the request is a short note
    payload_receipts: bool = True  # the agent's own large bodies may leave as receipts
    segments: bool = True  # a full window starts a new segment (if the policy manages it)
    receipt: Callable[[Observation], str] | None = None  # an evicted result's stub (None: the receipt)
    gate: ReadGate | None = None
