"""Which conversation a stateless request continues, and what it adds: the first piece
of serving a client's requests as one gateway session.

A client resends its whole history with every request. The conversation is named by
the client when it can (an ``X-Atrium-Session`` header, or an id its format carries),
else by the stable start of
its history: the key, the system prompt, the tools and the first user message, which an
agent loop never rewrites. What is new is what follows the longest run of messages the
session already holds, compared by digest; a history that differs before the end of
what the session holds was edited or compacted by the client, and says where
(``diverged_at``) so the session can start a new epoch or segment there instead of
sending a corrupted request. Plain Python over the gateway's neutral shapes, no Django.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from agents.endpoint.wire import WireError
from observations.gateway.messages import Message, Request, serialize_message

SESSION_HEADER = "X-Atrium-Session"
_HEADER_VALUE = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def conversation_key(key_id: int, request: Request, header: str | None = None, client_id: str | None = None) -> str:
    """The conversation's name within one gateway key: ``h:`` and the id of the header;
    ``c:`` and the digest of the id the client's format carries (``client_id``: the
    Responses API's ``prompt_cache_key``, which Codex sets to its session's id, where two
    runs in one folder start alike); or ``s:`` and the digest of the history's stable start."""
    if header is not None:
        if not _HEADER_VALUE.fullmatch(header):
            raise WireError(f"{SESSION_HEADER}: 1 to 128 letters, digits, `.`, `_`, `:` or `-`.",
                            param=SESSION_HEADER)
        return f"h:{key_id}:{header}"
    if client_id:
        return f"c:{key_id}:{hashlib.sha256(client_id.encode()).hexdigest()}"
    first_user = next((m for m in request.messages if m.role == "user"), None)
    start = json.dumps({
        "key": key_id,
        "system": request.system,
        "tools": [[t.name, t.description, t.parameters] for t in request.tools],
        "first": serialize_message(first_user) if first_user else None,
    }, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return f"s:{key_id}:{hashlib.sha256(start.encode()).hexdigest()}"


def message_digests(messages: Sequence[Message]) -> list[str]:
    """One digest per message, of its canonical form: what a session keeps to compare
    the next request's history with."""
    return [hashlib.sha256(serialize_message(m).encode()).hexdigest()[:32] for m in messages]


@dataclass(frozen=True)
class Continuation:
    """What a request adds to what the session holds (``known``)."""

    kept: int  # leading messages the session already holds, unchanged
    new: tuple[Message, ...]  # the messages after them
    diverged_at: int | None  # index of the first held message the client changed, or None

    @property
    def diverged(self) -> bool:
        return self.diverged_at is not None


def continuation(known: Sequence[str], request: Request) -> Continuation:
    """Split ``request``'s messages into what the session holds and what is new.

    An unchanged history that grew gives ``new`` = the appended messages. A history
    shorter than ``known``, or one that differs within it, diverged at the first
    difference; everything from there is new."""
    digests = message_digests(request.messages)
    kept = 0
    for held, sent in zip(known, digests, strict=False):
        if held != sent:
            break
        kept += 1
    diverged_at = kept if kept < len(known) else None
    return Continuation(kept=kept, new=request.messages[kept:], diverged_at=diverged_at)
