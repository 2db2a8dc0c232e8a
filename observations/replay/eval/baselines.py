"""Gateway configurations that exist only to be compared with production's: the
room-wide "already read" rule that deadlocked, and receipts from before `recall`. The
production gateway serves none of them; they are ``Serving`` switches (serving.py) the
replay turns on for its comparison runs (engine.new_context).
"""

from __future__ import annotations

from observations.gateway.transcript import FileRange, Observation


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


class RoomDedup:
    """The room-wide "already read" set of the gateway that deadlocked: a re-read of any
    range read before is denied, whatever the context holds (tests/replay/test_baselines.py)."""

    def __init__(self) -> None:
        self.seen: set = set()

    def denies(self, rng: FileRange) -> bool:
        return rng.key in self.seen

    def saw(self, rng: FileRange) -> None:
        self.seen.add(rng.key)

    @staticmethod
    def denial(obs: Observation) -> str:
        rng = obs.source.read.describe() if obs.source.read else obs.source.tool
        return f"[already read] {rng} was already read in this room; its text is not repeated."
