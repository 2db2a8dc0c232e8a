"""A worker's hold on a session: claimed with a compare-and-swap, kept by a lease a thread
renews while the session runs, lost (LeaseLost) when another worker took it over."""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import (
    DatabaseError,
    connection,
    transaction,
)
from django.db.models import Q
from django.utils import timezone

from sessions import dispatch
from sessions.events import session_event_append
from sessions.models import Session
from sessions.runtime import states
from sessions.runtime.liveness import lease_owner_gone

log = logging.getLogger(__name__)


class LeaseLost(Exception):
    """Another worker (or a person: cancel, time-out) took the session away."""


def session_claim(session_id: int, owner: str) -> bool:
    """Take the session if it is queued, or running under an expired lease or a dead owner."""
    now = timezone.now()
    claimable = dispatch.claimable(now)
    held_by = Session.objects.filter(pk=session_id, state=states.RUNNING).values_list("lease_owner", flat=True).first()
    if held_by and lease_owner_gone(held_by):
        claimable |= Q(state=states.RUNNING, lease_owner=held_by)  # compare-and-swap on that owner
    with transaction.atomic():
        was_queued = Session.objects.filter(pk=session_id, state=states.QUEUED).exists()
        updated = Session.objects.filter(claimable, pk=session_id).update(
            state=states.RUNNING, lease_owner=owner, wake_at=None, attention_at=None,
            lease_expires_at=now + timedelta(seconds=settings.ATRIUM_LEASE_SECONDS),
        )
        if updated != 1:
            return False
        session = Session.objects.select_related("task").get(pk=session_id)
        if session.started_at is None:
            Session.objects.filter(pk=session_id).update(started_at=now)
        if was_queued:
            session_event_append(session, "session.state_changed", {"state": states.RUNNING})
        # Every claim is logged (a new turn, a resume after a crash), without disturbing
        # room pages the way a state change does.
        session_event_append(session, "session.claimed", {"worker": owner})
    return True


def lease_renew(session_id: int, owner: str) -> bool:
    """One heartbeat: push the lease's end a full lease ahead."""
    expires = timezone.now() + timedelta(seconds=settings.ATRIUM_LEASE_SECONDS)
    return Session.objects.filter(pk=session_id, lease_owner=owner, state=states.RUNNING).update(
        lease_expires_at=expires) == 1


class LeaseKeeper(threading.Thread):
    """Renews the lease every heartbeat (ATRIUM_HEARTBEAT_SECONDS).

    `lost` is set when someone else holds the session (cancelled, timed out, claimed
    after an expiry) or when renewals kept failing (a locked or unreachable database)
    for long enough that the lease may already have run out: either way the runner
    stops before its next commit instead of racing another worker.
    """

    def __init__(self, session_id: int, owner: str) -> None:
        super().__init__(daemon=True, name=f"lease-{session_id}")
        self.session_id, self.owner = session_id, owner
        self.lost = threading.Event()
        self._halt = threading.Event()

    def run(self) -> None:
        period = settings.ATRIUM_HEARTBEAT_SECONDS
        # Past this without a heartbeat the lease may have run out and another worker
        # may hold the session: stop rather than race it.
        give_up_after = settings.ATRIUM_LEASE_SECONDS - period
        renewed = time.monotonic()
        try:
            while not self._halt.wait(period):
                try:
                    if not lease_renew(self.session_id, self.owner):
                        self.lost.set()
                        return
                    renewed = time.monotonic()
                except DatabaseError:
                    log.warning("lease renewal of session %s failed; retrying", self.session_id, exc_info=True)
                    connection.close()  # a fresh connection next time
                    if time.monotonic() - renewed > give_up_after:
                        self.lost.set()
                        return
        finally:
            connection.close()

    def stop(self) -> None:
        self._halt.set()
