"""The step loop's own state, saved with every unit of work (Session.runtime_state)."""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field
from typing import Any

BOUNDARY = "boundary"  # next: settle jobs, read inputs, re-read intent, send a request
CALLS = "calls"  # next: settle calls[next_call] of the current step
# next: read the verdict of review round `review_round` (an author), or look for the
# next round to review (a reviewer); sessions/runtime/reviews.py
REVIEW = "review"


@dataclass
class RuntimeState:
    phase: str = BOUNDARY
    calls: list[dict[str, Any]] = field(default_factory=list)  # [{id, name, arguments}]
    next_call: int = 0
    # A call of this step runs on as a job: the calls after it are not run.
    yielded_job: str | None = None
    # A parked `await` gives up at this time (epoch seconds).
    await_deadline: float | None = None
    # What people approved "always, for this session" (approvals.Rule as dicts).
    session_allowed: list[dict[str, str]] = field(default_factory=list)
    verify_rounds: int = 0  # failed checks sent back to the model
    verifies: int = 0  # checks run
    merge_rounds: int = 0  # merge conflicts handed back to the model (sessions/runtime/conflicts.py)
    nudged: list[str] = field(default_factory=list)
    wrote_files: bool = False  # since the last check command ran
    person_waiting: bool = False  # a person's message was delivered and not yet answered
    chat_cursor: int = 0  # room chat messages up to this seq were looked at for mentions
    last_reply: str = ""
    loop_alarms: list[str] = field(default_factory=list)  # keys of the loop alarms raised
    # Jobs the model was told about when it answered "done" while they ran, and the jobs
    # a parked session is held for (sessions/runtime/obligations.py).
    jobs_reminded: list[str] = field(default_factory=list)
    held_jobs: list[str] = field(default_factory=list)
    # Review rounds opened on this session's work (an author) or reviewed (a reviewer),
    # and whether a round approved it (sessions/runtime/reviews.py).
    review_round: int = 0
    review_approved: bool = False
    # A conflict resolved after round n was approved: that approval no longer covers the code.
    review_stale_round: int = 0
    # This boundary's jobs and people's messages are in the context and committed (they
    # were marked delivered before the model call): its next pass goes on to the call.
    inputs_taken: bool = False
    # The worktree as last read (file_changes.Reading as a dict): what the next call's
    # changes are found against; None until a step's calls begin, and after a turn's end.
    files_reading: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RuntimeState:
        if not data:
            return cls()
        # Copied: the worker compares the state with the dict it came from to skip unchanged
        # saves, and shared lists would change both alike.
        known = {k: copy.deepcopy(v) for k, v in data.items() if k in cls.__dataclass_fields__}
        # Saved before "always" was scoped: a bare tool name approved the whole tool.
        known["session_allowed"] = [
            rule if isinstance(rule, dict) else {"decision": "allow", "tool": rule}
            for rule in known.get("session_allowed", [])
        ]
        return cls(**known)
