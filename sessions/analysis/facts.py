"""A session's record as plain data: what the analysis, the transcript, the chart and the
loop alarm read. Built from the database by sessions.analysis.selectors and, live, from
the gateway's context by sessions.analysis.loops; no Django here."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from agents.tools import registry

WRITING_TOOLS = registry.WRITING

ReadKey = tuple[str, int | None, int | None, str]  # path, first line, last line, content sha256


@dataclass(frozen=True, slots=True)
class ToolFact:
    """One settled tool call."""

    step: int
    call_id: str
    tool: str
    arguments: dict[str, Any]
    is_error: bool = False
    read: ReadKey | None = None  # a file range read_file returned
    exit_code: int | None = None  # shell: how the command (or the job it became) ended
    job: str | None = None  # shell: the job it continued as
    duration_ms: int = 0
    served: str = "text"  # "text" or "note"
    tokens: int = 0
    preview: str = ""
    wrote: tuple[str, ...] = ()  # the files the session's record of changes holds for this call

    @property
    def writes(self) -> tuple[str, ...]:
        """The files the call changed: its record of changes, or, for a session from
        before that record was kept, the path of a file tool that wrote."""
        if self.wrote:
            return self.wrote
        return (self.path,) if self.tool in WRITING_TOOLS and not self.is_error and self.path else ()

    @property
    def command(self) -> str:
        command = self.arguments.get("command") if isinstance(self.arguments, dict) else None
        return command if isinstance(command, str) else ""

    @property
    def path(self) -> str:
        path = self.arguments.get("path") if isinstance(self.arguments, dict) else None
        return path if isinstance(path, str) else ""


@dataclass(frozen=True, slots=True)
class CallFact:
    """One model request, as the provider reported it and the gateway projected it."""

    step: int
    model: str
    input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    projected_tokens: int = 0
    cost: Decimal | None = None  # None: the model has no price
    latency_ms: int = 0
    error: str = ""
    prefix: dict[str, Any] = field(default_factory=dict)

    @property
    def context_tokens(self) -> int:
        """The request's size: what the provider counted, else the projection."""
        return self.input_tokens or self.projected_tokens


@dataclass(frozen=True, slots=True)
class FoldFact:
    number: int
    step: int
    tokens_freed: int
    evicted: int  # observations folded out
    projection_before: int = 0
    projection_after: int = 0
    reason: str = ""


@dataclass(frozen=True, slots=True)
class SegmentFact:
    """A stretch of the conversation; every session has at least one."""

    number: int
    step: int  # the step it started at
    tokens_freed: int = 0  # what starting it left behind


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of the session's event log (agents.SessionEvent)."""

    seq: int
    kind: str
    payload: dict[str, Any]
    at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Budgets:
    """The request size limits at the latest boundary (0 when none happened yet)."""

    trigger: int = 0
    ceiling: int = 0
    window: int = 0


@dataclass(frozen=True, slots=True)
class SessionFacts:
    session_id: int
    title: str
    agent: str
    model: str
    state: str
    check_command: str = ""
    steps: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    tools: tuple[ToolFact, ...] = ()
    calls: tuple[CallFact, ...] = ()
    folds: tuple[FoldFact, ...] = ()
    segments: tuple[SegmentFact, ...] = ()
    events: tuple[Event, ...] = ()
    budgets: Budgets = Budgets()
    people: dict[int, str] = field(default_factory=dict)  # chat message id → its text
