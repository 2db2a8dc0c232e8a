"""Celery tasks: adapters that load by id and call one service."""

from __future__ import annotations

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from agents.dispatch import turns_missing
from agents.models import Approval, Session
from agents.runtime import claims, states
from agents.runtime.inputs import has_pending_input
from agents.runtime.liveness import lease_owner_gone
from agents.runtime.waits import awaited, jobs_ready, session_jobs
from agents.services import approvals_expire, session_transition, session_wake


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_session(session_id: int | None = None) -> str:
    """A worker's turn: it runs the most urgent session that needs a worker, which need
    not be ``session_id`` (the session whose change sent the turn; agents.dispatch)."""
    from agents.runtime.worker import run_next

    return run_next()


@shared_task(ignore_result=True)
def stop_session_jobs(session_id: int) -> int:
    """Stop the jobs of a session that ended (cancel, time-out)."""
    return len(session_jobs(session_id).cancel_running("the session ended"))


@shared_task(ignore_result=True)
def sweep_sessions() -> dict[str, int]:
    """Beat's pass over sessions nobody is looking after."""
    now = timezone.now()
    counts = {"requeued": 0, "woken": 0, "expired_approvals": approvals_expire(now), "timed_out": 0}

    # A worker seen dead on this machine (its process is gone) need not miss heartbeats
    # first: its lease is ended now, so the session is claimable.
    held = Session.objects.filter(state=states.RUNNING, lease_expires_at__gte=now).exclude(lease_owner="")
    for pk, owner in held.values_list("pk", "lease_owner"):
        if lease_owner_gone(owner):
            Session.objects.filter(pk=pk, state=states.RUNNING, lease_owner=owner).update(lease_expires_at=None)
    # Claimable sessions the queue holds no turn for (a lease that ran out, a lost
    # message) get one; a session whose turn is still queued gets none, however long it
    # waited (agents.dispatch).
    missing = turns_missing(now)
    for _ in range(missing):
        run_session.delay()
    counts["requeued"] = missing

    # A parked session wakes when its time is up, its awaited jobs ended, a person wrote
    # to it while it was parking (posts wake it themselves: agents.services), or the
    # approval it waits for was decided while it was parking.
    for session in Session.objects.select_related("task", "agent").filter(state__in=states.PARKED):
        if _should_wake(session, now):
            with transaction.atomic():
                counts["woken"] += session_wake(session)

    active = Session.objects.select_related("task").filter(state__in=claims.TIMEABLE, started_at__isnull=False)
    for session in active:
        if not claims.over_time_limit(state=session.state, started_at=session.started_at,
                                      time_limit_seconds=session.time_limit_seconds, now=now):
            continue
        with transaction.atomic():
            reason = claims.time_out_reason(session.time_limit_seconds)
            if session_transition(session, states.TIMED_OUT, reason=reason, expected=session.state):
                counts["timed_out"] += 1
                transaction.on_commit(lambda sid=session.pk: stop_session_jobs.delay(sid))
    return counts


def _should_wake(session: Session, now) -> bool:
    runtime = session.runtime_state or {}
    if session.state == states.AWAITING_APPROVAL:
        return not Approval.objects.filter(session=session, state=Approval.State.PENDING).exists()
    if session.wake_at is None or session.wake_at <= now:
        return True
    if has_pending_input(session, chat_after=runtime.get("chat_cursor", 0)):
        return True
    arguments = awaited(runtime)
    if arguments is None:
        return False
    return jobs_ready(session_jobs(session.pk), arguments)
