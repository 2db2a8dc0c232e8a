"""The records `recall` and `history_search` read, for one session (agents/tools/memory.py)."""

from __future__ import annotations

from agents.tools.memory import AmbiguousRef, Hit, Recalled
from sessions.ledger.history import earlier_segments, history_search, recall_lookup


class DatabaseMemory:
    def __init__(self, session_id: int) -> None:
        self.session_id = session_id

    def recall(self, ref: str) -> Recalled | None:
        try:
            found = recall_lookup(self.session_id, ref)
        except ValueError as exc:
            raise AmbiguousRef(f"recall: {exc}") from None
        return None if found is None else Recalled(*found)

    def search(self, query: str, limit: int) -> tuple[int, list[Hit]]:
        earlier = earlier_segments(self.session_id)
        if not earlier:
            return 0, []
        return earlier, [
            Hit(entry.segment, entry.step, entry.label, entry.ref, " ".join(snippet.split()))
            for entry, snippet in history_search(self.session_id, query, limit)
        ]
