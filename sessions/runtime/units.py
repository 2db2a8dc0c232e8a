"""What a unit of the step loop (sessions/runtime/loop.py) ends with, and the plain data the
host answers it with: shared by the loop, the end of a turn (turn_end.py) and the worker."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from agents.providers import CallRecord
from agents.tools.outcome import ToolOutcome
from observations.gateway.messages import ToolCall
from observations.gateway.segments import HistoryItem

# A settled tool call: the call as recorded, its outcome, and a note appended for the model.
Settled = tuple[ToolCall, ToolOutcome, str]


class Outcome(StrEnum):
    CONTINUE = "continue"
    AWAIT_APPROVAL = "awaiting_approval"
    WAIT = "waiting"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    NEEDS_MERGE = "needs_merge"


@dataclass(frozen=True, slots=True)
class CheckResult:
    command: str
    exit_code: int
    output: str
    duration_ms: int

    @property
    def line(self) -> str:
        return f"{self.command} → exit {self.exit_code} ({self.duration_ms} ms)"


@dataclass(frozen=True, slots=True)
class Approval:
    state: str  # "approved", "denied" or "expired"
    by: str = ""
    always: bool = False
    reason: str = ""  # a denial's reason, in the person's words


@dataclass
class UnitResult:
    outcome: Outcome
    reason: str = ""
    wake_at: float | None = None
    delivered: tuple[int, ...] = ()  # steer ids to mark delivered when this unit commits
    delivered_mentions: tuple[int, ...] = ()  # agents' posts (message ids) this unit delivered
    call_records: list[CallRecord] = field(default_factory=list)
    approval_request: ToolCall | None = None
    # A segment ended in this unit: its number and its messages, calls and results, to
    # be stored for history_search.
    closed_segment: tuple[int, list[HistoryItem]] | None = None
    # Review before merge (sessions/runtime/reviews.py): an author opens round n with this
    # brief; a reviewer gives its verdict on round n (decision, reasons).
    review_opened: tuple[int, str] | None = None
    verdict: tuple[int, str, str] | None = None
