"""Sessions' contexts kept in memory between their requests, by the process that served
the last one: restoring a context from its saved state takes every message of the
history rendered and estimated again, the larger part of a long session's request.

A kept context is used only while it is what the session's saved state holds (its
journal's last record is the session's newest) and under the same model and policy;
else the state is read again. It is kept only once the unit that changed it committed,
and taken out while a request uses it, so a request that fails leaves nothing behind
that the database does not hold."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from observations.gateway.context import SessionContext
from observations.gateway.journal import StateJournal

KEPT = 128  # contexts a process keeps, the least recently used leaving first


@dataclass(frozen=True)
class Kept:
    ctx: SessionContext
    journal: StateJournal
    model: str
    policy: str

    @property
    def seq(self) -> int:
        return self.journal.seq


class KeptContexts:
    def __init__(self, size: int = KEPT) -> None:
        self.size = size
        self._kept: OrderedDict[int, Kept] = OrderedDict()
        self._lock = threading.Lock()  # requests run in several threads

    def take(self, session_id: int) -> Kept | None:
        with self._lock:
            return self._kept.pop(session_id, None)

    def keep(self, session_id: int, kept: Kept) -> None:
        with self._lock:
            self._kept[session_id] = kept
            self._kept.move_to_end(session_id)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()

    def __len__(self) -> int:
        return len(self._kept)


CONTEXTS = KeptContexts()
