"""Gateway configurations that exist only to be compared with production's: the
room-wide "already read" rule that deadlocked, receipts from before `recall`, and
SWE-agent's masking of old outputs. The production gateway (observations.gateway)
knows none of them; ``ComparisonContext`` adds them over its ``SessionContext``.
"""

from __future__ import annotations

from collections.abc import Callable

from observations.gateway.context import SessionContext
from observations.gateway.policies import FoldReason, KeepRecent, Policy
from observations.gateway.transcript import Entry, FileRange, Observation, ObsState

MASK_LAST_5 = "mask-last-5"


def mask_last_5() -> Policy:
    """SWE-agent's last_n_observations: keep the newest 5 results, stub the rest."""
    return KeepRecent(MASK_LAST_5, keep=5, max_tokens=None, reason=FoldReason.MASK)


def render_legacy_receipt(obs: Observation) -> str:
    """The receipt before `recall` existed."""
    src = obs.source
    parts = [f"purpose: {src.purpose}"] if src.purpose else []
    if src.read is not None:
        parts.append(f"range: {src.read.describe()}")
    parts.append(f"{src.size:,} bytes; sha256 {src.sha256[:16]}; first line: {src.text.split(chr(10), 1)[0][:80]!r}")
    return (
        f"[receipt] This {src.tool} result is not in the context any more ({src.tokens:,} tokens removed "
        f"to make room). {'; '.join(parts)}. Calling the tool again returns the full text."
    )


def render_room_dedup_denial(obs: Observation) -> str:
    """What the deadlocking gateway answered."""
    rng = obs.source.read.describe() if obs.source.read else obs.source.tool
    return f"[already read] {rng} was already read in this room; its text is not repeated."


def render_mask_stub(obs: Observation) -> str:
    """SWE-agent's `last_n_observations` stub."""
    return f"Old environment output: ({obs.source.text.count(chr(10)) + 1} lines omitted)"


class ComparisonContext(SessionContext):
    """A SessionContext with the comparison-only rules switched on.

    ``room_seen``: the room-wide "already read" set of the gateway that deadlocked (a
    re-read of any range read before is denied, whatever the context holds; see
    tests/replay/test_baselines.py). ``receipt``: how an evicted result is stubbed
    instead of production's receipt (legacy receipts, mask stubs). ``notes``,
    ``payload_receipts``, ``segments`` off: production without that piece (short notes
    for unchanged re-reads, receipts for bodies the agent wrote, new segments), to
    show what each is worth; the baselines also serve every result whole.
    """

    def __init__(self, *, room_seen: set | None = None, receipt: Callable[[Observation], str] | None = None,
                 notes: bool = True, payload_receipts: bool = True, segments: bool = True, **options) -> None:
        super().__init__(**options)
        self.room_seen = room_seen
        self.receipt = receipt
        self.notes = notes
        self.payload_receipts = payload_receipts
        self.segments_enabled = self.segments_enabled and segments

    def _serve_read(self, obs: Observation, rng: FileRange) -> None:
        if self.room_seen is not None and rng.key in self.room_seen:
            obs.state, obs.denied = ObsState.RECEIPTED, True
        elif self.notes:
            super()._serve_read(obs, rng)
        else:  # every read served whole: no note, even for text still in the request
            seen = self.ledger.lookup(rng)
            if seen is not None and not seen.in_context:
                obs.reread_of = seen.obs_id
            self.ledger.received(rng, obs.obs_id, self.step)
        if self.room_seen is not None:
            self.room_seen.add(rng.key)

    def _register_payloads(self, entry: Entry) -> None:
        if self.payload_receipts:
            super()._register_payloads(entry)

    def shown_text(self, obs: Observation) -> str:
        if obs.denied:
            return render_room_dedup_denial(obs)
        return super().shown_text(obs)

    def receipt_text(self, obs: Observation) -> str:
        if self.receipt is not None and obs.alias_of is None:
            return self.receipt(obs)
        return super().receipt_text(obs)
