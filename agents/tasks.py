"""Celery tasks: adapters that load by id and call one service."""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError

from agents.dispatch import RUN_SESSION, STOP_SESSION_JOBS
from agents.retention import old_worktrees_remove
from agents.runtime.waits import session_jobs
from agents.runtime.worker import run_next
from agents.sweep import sessions_sweep


# A turn that met a lost database connection (claiming, say) is sent again, with
# backoff up to half a minute, for about ten minutes; a session it had claimed is given
# back by the worker itself (agents.runtime.worker).
@shared_task(name=RUN_SESSION, acks_late=True, reject_on_worker_lost=True, ignore_result=True,
             autoretry_for=(OperationalError, InterfaceError), retry_backoff=1, retry_backoff_max=30, max_retries=20)
def run_session(session_id: int | None = None) -> str:
    """A worker's turn: it runs the most urgent session that needs a worker, which need
    not be ``session_id`` (the session whose change sent the turn; agents.dispatch)."""
    return run_next()


@shared_task(name=STOP_SESSION_JOBS, ignore_result=True)
def stop_session_jobs(session_id: int) -> int:
    """Stop the jobs of a session that ended (cancel, time-out)."""
    return len(session_jobs(session_id).cancel_running("the session ended"))


@shared_task(ignore_result=True)
def sweep_sessions() -> dict[str, int]:
    """Beat's pass over sessions nobody is looking after (agents.sweep)."""
    return sessions_sweep()


@shared_task(ignore_result=True)
def remove_old_worktrees() -> int:
    """Beat's pass, every ten minutes, over the worktrees of sessions that ended long ago
    (agents.retention)."""
    return old_worktrees_remove()
