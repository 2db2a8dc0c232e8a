"""Running one session on a worker: claim it, run units of work, commit each one.

A session is claimed with a compare-and-swap on its lease; a heartbeat thread renews
the lease every ATRIUM_HEARTBEAT_SECONDS while units run, and every commit checks the
lease again under the row lock, so two workers never both commit a step of the same
session. A worker that dies stops renewing: its lease runs out after a few missed
heartbeats (ATRIUM_LEASE_SECONDS), or at once when its process is seen gone on this
machine; beat re-enqueues the session and the next worker resumes from the last
committed unit.
"""

from __future__ import annotations

from django.db import (
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
    transaction,
)

from agents.providers.errors import InvalidModelSpec
from agents.tools.beneath import PathRefused
from agents.tools.disk import WorktreeFull
from rooms.errors import RoomPermissionError
from rooms.repository.mirror import HubRefused, HubShutOut, HubUnreachable
from rooms.repository.worktrees import CheckoutTooLarge
from sessions import dispatch
from sessions.models import Session
from sessions.runtime import states
from sessions.runtime.liveness import worker_id
from sessions.services.lifecycle import (
    session_transition,
)
from sessions.worker import faults
from sessions.worker.lease import LeaseKeeper, LeaseLost, session_claim
from sessions.worker.runner import SessionRunner, log


def run_next() -> str:
    """A worker's turn: claim the most urgent session that needs a worker and run it
    (sessions.dispatch); what happened, for the task's log."""
    owner = worker_id()
    for session_id in dispatch.candidates():
        if session_claim(session_id, owner):
            return f"session {session_id}: {_run_claimed(session_id, owner)}"
    return "nothing to run"


def run_session(session_id: int) -> str:
    """Run ``session_id`` until it parks or ends; what happened, for the task's log."""
    owner = worker_id()
    if not session_claim(session_id, owner):
        return "not claimable"
    return _run_claimed(session_id, owner)


def _given_back_or_failed(session_id: int, owner: str, exc: Exception) -> str:
    """What waiting fixes (the database's connection lost, the hub's git remote silent)
    gives the session back to be resumed; a statement that fails each time fails it."""
    if isinstance(exc, HubUnreachable):
        log.warning("session %s: the hub's git remote failed under it (%s); giving it back", session_id, exc)
        return faults.give_back(session_id, owner, exc, why="the hub's git remote did not answer")
    if not faults.connection_lost(exc, connection.vendor):  # a statement that fails each time (a timeout, a limit): no wait fixes it
        log.exception("session %s failed", session_id)
        _fail(session_id, owner, f"internal error: {type(exc).__name__}: {exc}")
        return "failed"
    log.warning("session %s: the database failed under it (%s); giving it back", session_id, exc)
    return faults.give_back(session_id, owner, exc)


def _shut_out(session_id: int, owner: str) -> str:
    """The hub refused this worker's token: its lease moved on (nothing to do), or, if it
    is still its own, the hub reads the token otherwise (another SECRET_KEY, or clocks
    that disagree by more than a lease), which no retry mends."""
    if _fail(session_id, owner, "the hub would not let its worker in although the worker held the session: "
                                "the worker's SECRET_KEY is not the hub's, or their clocks disagree"):
        return "failed"
    return "lease lost"


def _run_claimed(session_id: int, owner: str) -> str:
    keeper = LeaseKeeper(session_id, owner)
    keeper.start()
    runner = None
    try:
        if (short := faults.space_still_short(session_id)) is not None:
            # Not run again before its disk has room: each run would call the model anew.
            return faults.wait_for_space(session_id, owner, short)
        session = Session.objects.select_related("task", "task__room", "agent").defer("gateway_state").get(
            pk=session_id)
        runner = SessionRunner(session, owner, keeper)
        runner.run()
        return "ran"
    except LeaseLost:
        return "lease lost"
    except HubShutOut:
        return _shut_out(session_id, owner)
    except (InvalidModelSpec, PathRefused, RoomPermissionError, CheckoutTooLarge, HubRefused) as exc:
        _fail(session_id, owner, _refusal(exc))
        return "failed"
    except WorktreeFull as exc:
        if _fail(session_id, owner, f"stopped by the hub: {exc}") and runner is not None:
            faults.remove_files_past_the_limit(session_id, runner.toolbox, runner.worktree)
        return "failed"
    except (OperationalError, InterfaceError, HubUnreachable) as exc:
        return _given_back_or_failed(session_id, owner, exc)
    except Exception as exc:  # a bug or a broken environment: fail the session, keep the worker
        if faults.disk_full(exc):
            log.warning("session %s: the disk is full (%s); it waits for space", session_id, exc)
            return faults.wait_for_space(session_id, owner, exc)
        log.exception("session %s failed", session_id)
        _fail(session_id, owner, f"internal error: {type(exc).__name__}: {exc}")
        return "failed"
    finally:
        keeper.stop()
        if runner is not None:
            runner.doorbell.close()  # first: a provider that fails to close must not leak its thread
            if getattr(runner, "host", None) is not None:
                runner.host.close()
            runner.provider.close()
        close_old_connections()


def _refusal(exc: InvalidModelSpec | PathRefused | RoomPermissionError | CheckoutTooLarge | HubRefused) -> str:
    """Why a session that cannot go on fails, as a person reads it."""
    if isinstance(exc, InvalidModelSpec):  # e.g. the replay file was removed, no API key is set
        return f"the agent's model cannot be used: {exc}"
    # A link where the hub's files go, a branch too large, a push the git remote's checks turned down.
    if isinstance(exc, PathRefused | CheckoutTooLarge | HubRefused):
        return f"refused by the hub: {exc}"
    return f"refused: {exc.message}"  # e.g. its profile spends an account whose owner left the room


@transaction.atomic
def _fail(session_id: int, owner: str, reason: str) -> bool:
    """Fail the session if this worker still holds it; whether it did."""
    session = Session.objects.select_for_update().select_related("task").get(pk=session_id)
    if session.state == states.RUNNING and session.lease_owner == owner:
        return session_transition(session, states.FAILED, reason=reason[:2000], expected=states.RUNNING)
    return False


