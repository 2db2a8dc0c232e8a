"""The step loop's narrow views of the world (sessions/worker/host.py implements them all
with the database, the worktree and the room; tests implement them in memory): the model,
people's input, the session's jobs, its tools, and its repository with the check and the
review. Each part of the loop asks for the ports it uses only."""

from __future__ import annotations

from typing import Any, Protocol

from agents.tools.outcome import ToolOutcome
from agents.tools.shell import JobReport
from observations.gateway.messages import ToolCall
from sessions.runtime import obligations, reviews
from sessions.runtime.approvals import Rule
from sessions.runtime.delivery import Input
from sessions.runtime.file_changes import FileChange, Reading
from sessions.runtime.units import Approval, CheckResult


class Events(Protocol):
    def emit(self, kind: str, payload: dict[str, Any]) -> None: ...


class ModelPort(Events, Protocol):
    def call_model(self, request) -> Any: ...  # -> agents.providers.Completion


class InboxPort(Protocol):
    def pending_inputs(self, *, chat_after: int) -> list[Input]: ...
    def read_intent(self) -> str | None: ...
    def segment_request(self) -> str: ...  # who asked for a new segment ("" if nobody)


class JobsPort(Protocol):
    def settle_jobs(self, token: str) -> tuple[JobReport, ...]: ...
    def job_views(self) -> list[obligations.JobView]: ...


class ToolsPort(Events, Protocol):
    def approval_rules(self) -> list[Rule]: ...
    def approval(self, call_id: str) -> Approval | None: ...
    def rule_arguments(self, call: ToolCall) -> dict[str, Any]: ...
    # The call ids of the session's committed results before ``before_seq`` (earlier
    # segments): ids a repeating provider must not reuse.
    def earlier_call_ids(self, before_seq: int) -> set[str]: ...
    def execute(self, call: ToolCall) -> ToolOutcome: ...
    # Why the call would fail, changing nothing, as things stand (None: it may apply).
    def cannot_apply(self, call: ToolCall) -> str | None: ...
    def skip(self, call: ToolCall, reason: str) -> ToolOutcome: ...
    def await_ready(self, call: ToolCall, *, chat_after: int) -> bool: ...


class WorktreePort(Events, Protocol):
    # What changed in the worktree since ``before`` (sessions/runtime/file_changes.py),
    # and the new reading; no change, only a reading, when ``before`` is None.
    def file_changes(self, before: Reading | None) -> tuple[list[FileChange], Reading]: ...


class RepositoryPort(Events, Protocol):
    check_command: str
    # Review before merge (sessions/runtime/reviews.py). ``reviewing``: this session is a
    # reviewer's. ``review_request`` commits the author's work and answers the brief of
    # round n, or None when the room has no reviewer (then the work merges at once).
    reviewing: bool

    def run_check(self) -> CheckResult: ...
    def finish(self) -> tuple[bool, str]: ...
    # The conflict of the last finish, handed to the session (the text it is told), or
    # None when a person has to resolve it.
    def hand_back_conflict(self, round_number: int) -> str | None: ...
    # A merge of main under way with markers left: (detail, what the agent is told).
    def conflict_left(self, round_number: int) -> tuple[str, str] | None: ...
    def review_request(self, round_number: int, check: CheckResult | None) -> str | None: ...
    def review_verdict(self, round_number: int) -> reviews.Verdict | None: ...
    def next_review(self, after: int) -> reviews.NextRound: ...  # for a reviewer


class Host(ModelPort, InboxPort, JobsPort, ToolsPort, WorktreePort, RepositoryPort, Protocol):
    """Everything the step loop asks of the world."""
