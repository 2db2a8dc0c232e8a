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
sending a corrupted request.

A conversation the client does not name is found by the gateway's own answers in its
history (``route``): the latest one it holds names the conversation that gave it. A
history that diverged from that conversation but holds its last answer is the same run,
changed by its client (a new segment); one that does not is another run that started
alike, a twin, or a branch from an earlier answer (``placement``: a conversation of its
own). Plain Python over the gateway's neutral shapes, no Django.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from endpoint.wire import WireError
from observations.gateway.messages import (
    Message,
    ModelTurn,
    Request,
    ToolCall,
    message_digest,
    serialize_message,
)

SESSION_HEADER = "X-Atrium-Session"
_HEADER_VALUE = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def conversation_key(key_id: int, request: Request, header: str | None = None, client_id: str | None = None) -> str:
    """The conversation's name within one gateway key: ``h:`` and the id of the header;
    ``c:`` and the digest of the id the client's format carries (``client_id``: the
    Responses API's ``prompt_cache_key``, which Codex sets to its session's id, where two
    runs in one folder start alike; Claude Code's session id) with the system prompt and
    tools; or ``s:`` and the digest of the history's stable start."""
    if header is not None:
        if not _HEADER_VALUE.fullmatch(header):
            raise WireError(f"{SESSION_HEADER}: 1 to 128 letters, digits, `.`, `_`, `:` or `-`.",
                            param=SESSION_HEADER)
        return f"h:{key_id}:{header}"
    tools = [[t.name, t.description, t.parameters] for t in request.tools]
    if client_id:
        # With its system prompt and tools: a client's side requests under the same id
        # (Claude Code's titles and subagents) are conversations of their own.
        named = json.dumps([client_id, request.system, tools], ensure_ascii=False, separators=(",", ":"))
        return f"c:{key_id}:{hashlib.sha256(named.encode()).hexdigest()}"
    first_user = next((m for m in request.messages if m.role == "user"), None)
    start = json.dumps({
        "key": key_id,
        "user": request.params.user,  # an end user's id only ever tells runs apart
        "system": request.system,
        "tools": tools,
        "first": serialize_message(first_user) if first_user else None,
    }, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return f"s:{key_id}:{hashlib.sha256(start.encode()).hexdigest()}"


def named(conversation: str) -> bool:
    """Whether the client named ``conversation`` (``conversation_key``'s ``h:`` and ``c:``)."""
    return not conversation.startswith("s:")


def message_digests(messages: Sequence[Message]) -> list[str]:
    """One digest per message, of its canonical content: what a session keeps to compare
    the next request's history with."""
    return [message_digest(m).hex()[:32] for m in messages]


def answer_digest(turn: ModelTurn) -> str:
    """The digest of ``turn`` as the client sends it back in its next history: its text
    trimmed, as some clients give it back (aider drops the final newline)."""
    return _answer(turn.text, turn.tool_calls)


def answer_digests(messages: Sequence[Message]) -> list[str]:
    """Per message of a history, the ``answer_digest`` it matches if it is an answer of
    the gateway's ("" for a message of another role)."""
    return [_answer_of(m) if m.role == "assistant" else "" for m in messages]


def _answer_of(message: Message) -> str:
    if message.text == message.text.strip() and message.tool_call_id is None and message.tool_name is None:
        # The message as an answer is the message itself: its digest, made once for
        # the history's comparison, serves (a long session's history holds hundreds).
        return message_digests([message])[0]
    return _answer(message.text, message.tool_calls)


def _answer(text: str, tool_calls: tuple[ToolCall, ...]) -> str:
    return message_digests([Message("assistant", text.strip(), tool_calls=tool_calls)])[0]


@dataclass(frozen=True)
class Answered:
    """An answer the gateway gave: its digest and the conversation it went to."""

    digest: str
    conversation: str
    continues: bool  # whether the request continues that conversation's history unchanged


def route(digests: Sequence[str], answers: Sequence[Answered]) -> str | None:
    """The conversation of the latest gateway answer in a history (``digests``: its
    ``answer_digests``), of those ``answers`` that hold one of its digests; of two that
    gave the same answer, the one the history continues. None: it holds none."""
    position = {d: i for i, d in enumerate(digests) if d}
    ranked = [(position[a.digest], a.continues, a.conversation) for a in answers if a.digest in position]
    return max(ranked)[2] if ranked else None


Placement = Literal["continue", "segment", "fork"]


def continues(known: Sequence[str], digests: Sequence[str]) -> bool:
    """Whether a history of message ``digests`` holds ``known`` unchanged at its start."""
    return len(digests) >= len(known) and all(h == d for h, d in zip(known, digests, strict=False))


def placement(known: Sequence[str], last_answer: str, digests: Sequence[str], answers: Sequence[str], *,
              client_named: bool) -> Placement:
    """Where a request with message ``digests`` (and ``answers``, its ``answer_digests``)
    goes in a conversation that holds ``known`` and last answered ``last_answer``: it
    continues it; a diverged history of the same run starts a new segment (a client that
    names its conversation is always the same run); any other diverged history is
    another run's (a fork)."""
    if continues(known, digests):
        return "continue"
    return "segment" if client_named or (last_answer and last_answer in answers) else "fork"


@dataclass(frozen=True)
class Continuation:
    """What a request adds to what the session holds (``known``)."""

    kept: int  # leading messages the session already holds, unchanged
    new: tuple[Message, ...]  # the messages after them
    diverged_at: int | None  # index of the first held message the client changed, or None

    @property
    def diverged(self) -> bool:
        return self.diverged_at is not None


def continuation(known: Sequence[str], request: Request, digests: Sequence[str] | None = None) -> Continuation:
    """Split ``request``'s messages into what the session holds and what is new
    (``digests``: their ``message_digests``, where already made).

    An unchanged history that grew gives ``new`` = the appended messages. A history
    shorter than ``known``, or one that differs within it, diverged at the first
    difference; everything from there is new."""
    digests = message_digests(request.messages) if digests is None else digests
    kept = 0
    for held, sent in zip(known, digests, strict=False):
        if held != sent:
            break
        kept += 1
    diverged_at = kept if kept < len(known) else None
    return Continuation(kept=kept, new=request.messages[kept:], diverged_at=diverged_at)
