"""Session states and the only transitions allowed between them."""

from __future__ import annotations

QUEUED = "queued"
RUNNING = "running"
AWAITING_APPROVAL = "awaiting_approval"
WAITING = "waiting"
SUCCEEDED = "succeeded"
FAILED = "failed"
CANCELLED = "cancelled"
TIMED_OUT = "timed_out"
NEEDS_MERGE = "needs_merge"

TERMINAL = frozenset({SUCCEEDED, FAILED, CANCELLED, TIMED_OUT})
# Parked: holds no worker; an event (decision, job end, steer, timer) re-queues it.
PARKED = frozenset({AWAITING_APPROVAL, WAITING})
ACTIVE = frozenset({QUEUED, RUNNING}) | PARKED

TRANSITIONS: dict[str, frozenset[str]] = {
    QUEUED: frozenset({RUNNING, CANCELLED, TIMED_OUT}),
    RUNNING: frozenset({QUEUED, AWAITING_APPROVAL, WAITING, SUCCEEDED, FAILED, CANCELLED, TIMED_OUT, NEEDS_MERGE}),
    AWAITING_APPROVAL: frozenset({QUEUED, CANCELLED, TIMED_OUT}),
    WAITING: frozenset({QUEUED, CANCELLED, TIMED_OUT}),
    SUCCEEDED: frozenset(),
    FAILED: frozenset(),
    CANCELLED: frozenset(),
    TIMED_OUT: frozenset(),
    NEEDS_MERGE: frozenset({SUCCEEDED, CANCELLED}),
}


class InvalidTransition(ValueError):
    def __init__(self, current: str, target: str) -> None:
        super().__init__(f"a session cannot go from {current} to {target}")
        self.current, self.target = current, target


def check_transition(current: str, target: str) -> None:
    if target not in TRANSITIONS.get(current, frozenset()):
        raise InvalidTransition(current, target)
