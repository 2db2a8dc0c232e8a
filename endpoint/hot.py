"""Sessions' contexts kept in memory between their requests, by the process that served
the last one: restoring a context from its saved state takes every message of the
history rendered and estimated again, the larger part of a long session's request.
(And conversations' last histories, whose digests the next request's serve again.)

A kept context is used only while it is what the session's saved state holds (its
journal's last record is the session's newest) and under the same model and policy;
else the state is read again. It is kept only once the unit that changed it committed,
and taken out while a request uses it, so a request that fails leaves nothing behind
that the database does not hold."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from observations.gateway.context import SessionContext
from observations.gateway.journal import StateJournal
from observations.gateway.messages import Message, digests_carried

KEPT = 128  # contexts a process keeps, the least recently used leaving first,
KEPT_TOKENS = 8_000_000  # and their requests' estimated tokens, all of them (some 30 MB of text)


@dataclass(frozen=True)
class Kept:
    ctx: SessionContext
    journal: StateJournal
    model: str
    policy: str

    @property
    def seq(self) -> int:
        return self.journal.seq

    @property
    def tokens(self) -> int:
        return self.ctx.transcript.estimate


class KeptContexts:
    def __init__(self, size: int = KEPT, tokens: int = KEPT_TOKENS) -> None:
        self.size, self.budget = size, tokens
        self._kept: OrderedDict[int, Kept] = OrderedDict()
        self._tokens = 0
        self._lock = threading.Lock()  # requests run in several threads

    def take(self, session_id: int) -> Kept | None:
        with self._lock:
            kept = self._kept.pop(session_id, None)
            if kept is not None:
                self._tokens -= kept.tokens
            return kept

    def keep(self, session_id: int, kept: Kept) -> None:
        with self._lock:
            if (old := self._kept.pop(session_id, None)) is not None:
                self._tokens -= old.tokens
            self._kept[session_id] = kept
            self._tokens += kept.tokens
            while self._kept and (len(self._kept) > self.size or self._tokens > self.budget):
                self._tokens -= self._kept.popitem(last=False)[1].tokens

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._tokens = 0

    def __len__(self) -> int:
        return len(self._kept)


CONTEXTS = KeptContexts()


HISTORIES_KEPT = 128  # histories a process keeps, the least recently seen leaving first,
HISTORIES_KEPT_CHARS = 32_000_000  # and their characters (texts, thinking, calls' arguments), all of them


class KeptHistories:
    """The history each conversation sent last, by the process that served it: the next
    request resends it, and its messages' digests serve again (``digests_carried``).
    Digests depend on nothing but the messages, so a history is kept whether its request
    went well or not."""

    def __init__(self, size: int = HISTORIES_KEPT, chars: int = HISTORIES_KEPT_CHARS) -> None:
        self.size, self.budget = size, chars
        self._kept: OrderedDict[Hashable, tuple[Sequence[Message], int]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def carry(self, conversation: Hashable, messages: Sequence[Message]) -> None:
        """Give ``messages`` the digests of the conversation's last history, and keep them
        as its last history instead (unless they alone are more than all kept may be)."""
        chars = sum(map(_chars, messages))
        with self._lock:
            held = self._kept.pop(conversation, None)
            if held is not None:
                self._chars -= held[1]
            if chars <= self.budget:
                self._kept[conversation] = (messages, chars)
                self._chars += chars
            while self._kept and (len(self._kept) > self.size or self._chars > self.budget):
                self._chars -= self._kept.popitem(last=False)[1][1]
        if held is not None:
            digests_carried(held[0], messages)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._chars = 0


HISTORIES = KeptHistories()


def _chars(message: Message) -> int:
    """The characters ``message`` holds: its text, thinking and calls' arguments (a call
    that writes a file holds the file), each string counted once, however nested."""
    count = len(message.text) + sum(map(len, message.thinking))
    values: list = [call.arguments for call in message.tool_calls]
    while values:
        value = values.pop()
        if isinstance(value, str):
            count += len(value)
        elif isinstance(value, dict):
            count += sum(len(str(name)) for name in value)
            values.extend(value.values())
        elif isinstance(value, list):
            values.extend(value)
        else:
            count += 8
    return count
