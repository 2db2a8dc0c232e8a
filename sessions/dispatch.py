"""Which session a free worker runs next, and how many turns the queue holds.

A queue message is a *turn*, not a session: the worker that receives one claims the
most urgent session that needs a worker (people waiting first, then the longest
queued) and runs it for one slice. So a steer or a decision moves its session ahead of
every message already queued, and a turn that finds nothing to claim does nothing.
Every change that makes a session claimable sends one turn after commit
(``sessions.services.lifecycle.enqueue_session``); beat's sweep sends turns only for claimable
sessions the queue holds no turn for (a lost message, a dead worker), so nothing is
delivered twice however long sessions wait.

Services send their tasks from here, by name: this module imports neither the tasks nor
the worker, so ``sessions.tasks`` → ``sessions.worker.run`` → ``agents.services`` runs
one way (an import-linter contract in pyproject.toml keeps it so).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from sessions.models import Session
from sessions.runtime import claims

CANDIDATES = 8  # sessions a turn tries, in order, before concluding there is nothing to run
# The tasks' names; sessions.tasks registers its tasks under these.
RUN_SESSION = "sessions.tasks.run_session"
STOP_SESSION_JOBS = "sessions.tasks.stop_session_jobs"


def turn_send_on_commit(session_id: int, *, countdown: float | None = None) -> None:
    """A turn for the queue once the current transaction commits (``session_id`` says
    whose change sent it; the worker runs the most urgent session, see above), after
    ``countdown`` seconds if given."""
    transaction.on_commit(lambda: current_app.send_task(RUN_SESSION, args=(session_id,), countdown=countdown),
                          robust=True)


def jobs_stop_on_commit(session_id: int) -> None:
    """Stop the jobs of an ended session once the current transaction commits."""
    transaction.on_commit(lambda: current_app.send_task(STOP_SESSION_JOBS, args=(session_id,)), robust=True)


def claimable(now: datetime) -> Q:
    """Sessions a worker may take: ``sessions.runtime.claims.claimable`` as a filter. A
    session driven through the gateway endpoint is never a worker's."""
    return (Q(state__in=claims.CLAIMABLE_ALWAYS) | Q(state__in=claims.CLAIMABLE_UNLEASED) & (
        Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))) & Q(origin=claims.WORKER_ORIGIN)


def not_held(now: datetime) -> Q:
    """No worker holds the session: ``not sessions.runtime.claims.held`` as a filter."""
    return Q(lease_owner="") | Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now)


def candidates(now: datetime | None = None, limit: int = CANDIDATES) -> list[int]:
    """The sessions a free worker should take, most urgent first: those people wait for
    (longest wait first), then those that waited longest in the queue (a resumed session
    of a dead worker, with no wake time, first)."""
    now = now or timezone.now()
    return list(Session.objects.filter(claimable(now)).order_by(
        F("attention_at").asc(nulls_last=True), F("wake_at").asc(nulls_first=True), "pk",
    ).values_list("pk", flat=True)[:limit])


def people_waiting(*, besides: int, now: datetime | None = None) -> bool:
    """Whether a person has waited more than ATRIUM_ATTENTION_GRACE_SECONDS for a session
    no worker holds (other than ``besides``): then a running slice yields at its next
    boundary. The grace lets an idle worker take it first, with nobody yielding."""
    now = now or timezone.now()
    since = now - timedelta(seconds=settings.ATRIUM_ATTENTION_GRACE_SECONDS)
    return Session.objects.filter(claimable(now), attention_at__lte=since).exclude(pk=besides).exists()


def queued_turns(queue: str | None = None) -> int:
    """Turns waiting in the broker's run queue (not counting those a worker holds)."""
    from kombu.exceptions import ChannelError

    with current_app.connection_for_read() as connection:
        try:
            return connection.default_channel.queue_declare(
                queue=queue or settings.CELERY_TASK_DEFAULT_QUEUE, passive=True).message_count
        except ChannelError:  # no such queue yet: nothing was ever sent, or all taken
            return 0


def turns_missing(now: datetime | None = None) -> int:
    """How many claimable sessions the queue holds no turn for."""
    now = now or timezone.now()
    return max(0, Session.objects.filter(claimable(now)).count() - queued_turns())
