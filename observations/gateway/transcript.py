"""What a session's conversation is made of, as plain data.

Within a segment only tool results (observations) and the large bodies inside the
agent's own tool calls (payloads.py) can leave the context; everything else — intent,
steers, questions, notes, the agent's prose — is kept verbatim. A new segment keeps
the intent and carries people's words into its handoff verbatim.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from observations.gateway.messages import ToolCall

# The fold number of a fresh result too large to put into a new segment at all.
RESET_FOLD = 0


class ObsState(StrEnum):
    FRESH = "fresh"  # the model has not answered since it arrived
    CONSUMED = "consumed"  # the model took a later step; evictable
    RECEIPTED = "receipted"  # folded out; a receipt stands in its tool_result
    ARCHIVED = "archived"  # its segment ended; the store keeps it for recall


@dataclass(frozen=True, slots=True)
class FileRange:
    """A file range as read: path relative to the worktree, 1-based inclusive lines."""

    path: str
    start: int | None = None
    end: int | None = None
    content_hash: str = ""  # sha256 of the text served for this range

    @property
    def key(self) -> tuple[str, int | None, int | None, str]:
        return (self.path, self.start, self.end, self.content_hash)

    def describe(self) -> str:
        if self.start is None and self.end is None:
            return self.path
        return f"{self.path} lines {self.start or 1}-{self.end if self.end is not None else 'end'}"


@dataclass(frozen=True, slots=True)
class ObservationInput:
    """One tool result as the tools produced it, before the gateway decides how to serve it."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    text: str
    sha256: str
    size: int  # bytes
    tokens: int
    purpose: str = ""
    read: FileRange | None = None  # set when the call read a file range
    file_fingerprint: str = ""  # sha256 of the whole file when it was read
    first_line: str = ""  # the first meaningful line (receipts.meaningful_first_line)
    exit_code: int | None = None  # a command's exit status, where the tool reports one
    written: tuple[str, ...] = ()  # paths the call wrote or edited


@dataclass(slots=True)
class Observation:
    """An observation inside one session's transcript."""

    obs_id: int  # position among the session's observations (all segments), from 0
    step: int
    source: ObservationInput
    segment: int = 1  # the segment it arrived in
    state: ObsState = ObsState.FRESH
    fold: int | None = None  # fold number that receipted it
    # Served as a short note because the same range was still in context as `alias_of`.
    alias_of: int | None = None
    # A re-read of a range whose earlier text (observation `reread_of`) had been folded out.
    reread_of: int | None = None
    # Comparison only: refused by a room-wide "already read" rule (the deadlock).
    denied: bool = False
    entry_index: int = -1  # position of its tool_result in the transcript
    gain: int = 0  # tokens a receipt would free, fixed when it became consumed

    @property
    def call_id(self) -> str:
        return self.source.call_id


@dataclass(slots=True)
class Entry:
    """One message of the transcript.

    kind: "intent" (the intent block), "intent_update", "task", "handoff", "user",
    "steer", "chat", "agent" (another agent's post), "note", "job", "nudge", "verify", "assistant",
    "tool_result".
    """

    kind: str
    text: str = ""
    step: int = 0
    tool_calls: tuple[ToolCall, ...] = ()
    observation: Observation | None = None
    tool_name: str | None = None
    pinned: bool = False
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def role(self) -> str:
        if self.kind == "assistant":
            return "assistant"
        if self.kind == "tool_result":
            return "tool"
        return "user"
