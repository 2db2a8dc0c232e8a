"""Beat's pass over sessions nobody is looking after: dead workers' leases, lost turns,
parked sessions whose reason to wait is gone, sessions past their time limit.

The decisions (``should_wake``, ``dead_leases``, and ``sessions.runtime.claims``) are plain Python
over a few columns; the service ``sessions_sweep`` reads those columns and acts through
the session services. It never loads a session's ``gateway_state`` or ``runtime_state``
(a sweep every few seconds over every session must not read megabytes): what it needs of
the runtime's state (chat cursor, held jobs, the pending call) it reads by JSON key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from celery import current_app
from django.db import transaction
from django.db.models.fields.json import KeyTransform
from django.utils import timezone

from sessions.dispatch import RUN_SESSION, jobs_stop_on_commit, turns_missing
from sessions.models import Approval, Session
from sessions.runtime import claims, states
from sessions.runtime.liveness import lease_owner_gone
from sessions.runtime.loop_state import REVIEW
from sessions.services.approvals import approvals_expire
from sessions.services.lifecycle import session_transition, session_wake
from sessions.worker.inputs import has_pending_input
from sessions.worker.job_journal import session_jobs
from sessions.worker.waits import awaited, jobs_ready

# --- decisions: no database ---------------------------------------------------------------


def dead_leases(held: Iterable[tuple[int, str]], *, gone: Callable[[str], bool] = lease_owner_gone,
                ) -> list[tuple[int, str]]:
    """The (session, owner) leases whose owner is seen dead on this machine: they end now
    rather than after missed heartbeats."""
    return [(pk, owner) for pk, owner in held if gone(owner)]


def should_wake(*, state: str, wake_at: datetime | None, now: datetime, approval_pending: bool,
                input_pending: Callable[[], bool], waits_on: Callable[[], dict[str, Any] | None],
                jobs_done: Callable[[dict[str, Any]], bool]) -> bool:
    """Whether a parked session should be queued again: the approval it waits for was
    decided, its time came, a person wrote to it, or the jobs it awaits ended. The costly
    questions are callables, asked only when the cheaper ones did not decide."""
    if state == states.AWAITING_APPROVAL:
        return not approval_pending
    if wake_at is None or wake_at <= now:
        return True
    if input_pending():
        return True
    arguments = waits_on()
    return arguments is not None and jobs_done(arguments)


# --- the sweep ----------------------------------------------------------------------------


def sessions_sweep(now: datetime | None = None) -> dict[str, int]:
    """One pass; what it did, counted."""
    now = now or timezone.now()
    counts = {"requeued": 0, "woken": 0, "expired_approvals": approvals_expire(now), "timed_out": 0}
    leases_of_dead_workers_end(now)
    counts["requeued"] = turns_send(turns_missing(now))
    counts["woken"] = parked_sessions_wake(now)
    counts["timed_out"] = sessions_time_out(now)
    return counts


def leases_of_dead_workers_end(now: datetime) -> int:
    """A worker seen dead on this machine (its process is gone) need not miss heartbeats
    first: its lease ends now, so the session is claimable."""
    held = Session.objects.filter(state=states.RUNNING, lease_expires_at__gte=now).exclude(lease_owner="")
    ended = 0
    for pk, owner in dead_leases(held.values_list("pk", "lease_owner")):
        # Compare-and-swap on the owner: a session claimed again meanwhile keeps its lease.
        ended += Session.objects.filter(pk=pk, state=states.RUNNING, lease_owner=owner).update(
            lease_expires_at=None)
    return ended


def turns_send(count: int) -> int:
    """Send ``count`` turns for claimable sessions the queue holds none for (a lease that
    ran out, a lost message); a session whose turn is still queued gets none, however
    long it waited (sessions.dispatch)."""
    for _ in range(count):
        current_app.send_task(RUN_SESSION)
    return count


def _parked(now: datetime):
    """Parked sessions with only what the decision and the wake read: the runtime's
    chat cursor, held jobs and pending call index by JSON key, never the whole state."""
    return Session.objects.filter(state__in=states.PARKED).select_related("task", "agent").only(
        "state", "wake_at", "created_at", "task__room", "agent__name",
    ).annotate(
        chat_cursor=KeyTransform("chat_cursor", "runtime_state"),
        held_jobs=KeyTransform("held_jobs", "runtime_state"),
        next_call=KeyTransform("next_call", "runtime_state"),
        phase=KeyTransform("phase", "runtime_state"),
    ).order_by("pk")


def _waits_on(session: Session) -> dict[str, Any] | None:
    """What the parked session awaits (sessions.worker.waits.awaited), reading only the
    one pending call of its runtime state, and only when asked."""
    index = session.next_call or 0
    call = None
    if not session.held_jobs and isinstance(index, int):
        call = Session.objects.filter(pk=session.pk).values_list(
            KeyTransform(str(index), KeyTransform("calls", "runtime_state")), flat=True).first()
    # The same question `awaited` answers for the worker, over the parts it reads.
    return awaited({"held_jobs": session.held_jobs, "calls": [call] if isinstance(call, dict) else [],
                    "next_call": 0})


def parked_sessions_wake(now: datetime) -> int:
    """Queue each parked session whose reason to wait is gone (posts and decisions wake
    their sessions themselves; this catches what happened while one was parking)."""
    pending = set(Approval.objects.filter(state=Approval.State.PENDING, session__state=states.AWAITING_APPROVAL)
                  .values_list("session_id", flat=True))
    woken = 0
    for session in _parked(now):
        if should_wake(
            state=session.state, wake_at=session.wake_at, now=now, approval_pending=session.pk in pending,
            # Parked on a review round, a session reads people's messages after the verdict
            # (sessions/runtime/reviews.py): waking it for them would only park it again.
            input_pending=lambda s=session: s.phase != REVIEW and has_pending_input(s, chat_after=s.chat_cursor or 0),
            waits_on=lambda s=session: _waits_on(s),
            jobs_done=lambda arguments, s=session: jobs_ready(session_jobs(s.pk), arguments),
        ):
            with transaction.atomic():
                woken += session_wake(session)
    return woken


def sessions_time_out(now: datetime) -> int:
    """End every session past its time limit; its jobs are stopped after commit."""
    active = Session.objects.filter(state__in=claims.TIMEABLE, started_at__isnull=False,
                                    origin=claims.WORKER_ORIGIN).select_related(
        "task").only("state", "started_at", "time_limit_seconds", "task__room").order_by("pk")
    timed_out = 0
    for session in active:
        if not claims.over_time_limit(state=session.state, started_at=session.started_at,
                               time_limit_seconds=session.time_limit_seconds, now=now):
            continue
        with transaction.atomic():
            if session_transition(session, states.TIMED_OUT, reason=claims.time_out_reason(session.time_limit_seconds),
                                  expected=session.state):
                timed_out += 1
                jobs_stop_on_commit(session.pk)
    return timed_out
