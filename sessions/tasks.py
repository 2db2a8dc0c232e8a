"""Celery tasks: adapters that load by id and call one service."""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError

from sessions.dispatch import RUN_SESSION, STOP_SESSION_JOBS
from sessions.retention import machine_pass_now_and_then, old_worktrees_remove
from sessions.sweep import sessions_sweep
from sessions.worker.job_journal import session_jobs
from sessions.worker.run import run_next


# A turn that met a lost database connection (claiming, say) is sent again, with
# backoff up to half a minute, for about ten minutes; a session it had claimed is given
# back by the worker itself (sessions.worker.run).
@shared_task(name=RUN_SESSION, acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             autoretry_for=(OperationalError, InterfaceError), retry_backoff=1, retry_backoff_max=30, max_retries=20)
def run_session(session_id: int | None = None) -> str:
    """A worker's turn: it runs the most urgent session that needs a worker, which need
    not be ``session_id`` (the session whose change sent the turn; sessions.dispatch)."""
    ran = run_next()
    machine_pass_now_and_then()
    return ran


@shared_task(name=STOP_SESSION_JOBS, ignore_result=True)
def stop_session_jobs(session_id: int) -> int:
    """Stop the jobs of a session that ended (cancel, time-out)."""
    return len(session_jobs(session_id).cancel_running("the session ended"))


@shared_task(ignore_result=True)
def sweep_sessions() -> dict[str, int]:
    """Beat's pass over sessions nobody is looking after (sessions.sweep)."""
    return sessions_sweep()


@shared_task(ignore_result=True)
def remove_old_worktrees() -> int:
    """Beat's pass, every ten minutes, over the worktrees of sessions that ended long ago
    (sessions.retention)."""
    return old_worktrees_remove()
