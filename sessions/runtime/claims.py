"""Whether a worker may take a session, and whether a session ran past its time limit.

Plain predicates over a session's fields, with no database: the worker's claim, the
dispatcher's queries (``sessions.dispatch.claimable``, its translation into a filter) and
beat's sweep all decide with these, so "claimable" and "over its limit" mean one thing.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sessions.runtime import states

# A queued session is always claimable; a running one only when no live lease holds it
# (a turn given back at the end of a slice, a worker that died).
CLAIMABLE_ALWAYS = frozenset({states.QUEUED})
CLAIMABLE_UNLEASED = frozenset({states.RUNNING})
# Only the hub's own sessions are claimed or timed out; one driven through the gateway
# endpoint (Session.origin "endpoint") runs when its client sends a request.
WORKER_ORIGIN = "hub"

# The states a session can time out of: derived from the state machine, so a new state
# that may time out is swept without a second list to update.
TIMEABLE = frozenset(state for state, targets in states.TRANSITIONS.items() if states.TIMED_OUT in targets)


def lease_live(lease_expires_at: datetime | None, now: datetime) -> bool:
    """A lease holds until the instant it expires; none at all holds nothing."""
    return lease_expires_at is not None and lease_expires_at >= now


def held(*, lease_owner: str, lease_expires_at: datetime | None, now: datetime) -> bool:
    """Whether a worker holds the session now (whatever its state): a named owner with a
    live lease."""
    return bool(lease_owner) and lease_live(lease_expires_at, now)


def claimable(*, state: str, lease_expires_at: datetime | None, now: datetime) -> bool:
    """Whether a worker may take a session in ``state`` whose lease ends at
    ``lease_expires_at`` (the owner's death, seen on its machine, is the caller's to add:
    sessions.runtime.liveness)."""
    if state in CLAIMABLE_ALWAYS:
        return True
    return state in CLAIMABLE_UNLEASED and not lease_live(lease_expires_at, now)


def time_limit_ends(started_at: datetime, time_limit_seconds: int) -> datetime:
    return started_at + timedelta(seconds=time_limit_seconds)


def over_time_limit(*, state: str, started_at: datetime | None, time_limit_seconds: int, now: datetime) -> bool:
    """Whether a session has used up its time: only a started session that can still
    time out (not ended, not waiting for a merge) is over its limit, from the instant the
    limit ends."""
    if started_at is None or state not in TIMEABLE:
        return False
    return now >= time_limit_ends(started_at, time_limit_seconds)


def time_out_reason(time_limit_seconds: int) -> str:
    """The reason a timed-out session records, the same whoever noticed (worker or sweep)."""
    return f"timed out: ran longer than its limit of {time_limit_seconds} s"
