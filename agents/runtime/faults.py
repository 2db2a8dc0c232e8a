"""What a worker does when the database or the disk fails under a session it runs:
give back what waiting fixes (a lost connection, a restart), and remove what passed the
disk limit. Called from agents.runtime.worker's run of a claimed session."""

from __future__ import annotations

import logging
import shutil
import subprocess
import time
from datetime import timedelta

from django.db import InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

from agents import dispatch
from agents.events import session_event_append
from agents.models import Session, SessionEvent
from agents.runtime import states
from agents.services import session_transition
from agents.tools.box import ToolBox
from rooms.repository.git import GitError
from rooms.repository.worktrees import Worktree, WorktreeError, worktree_remove

log = logging.getLogger(__name__)

GIVE_BACK_ATTEMPTS = 5  # tries at writing the give-back itself
GIVE_BACKS_PER_STEP = 8  # then the session fails: the database keeps failing at the same step
GIVE_BACK_DELAY_MAX_SECONDS = 60.0


# PostgreSQL's classes of what waiting fixes: a connection lost (08), the server shutting
# down or restarting (57P), out of resources (53: a full disk, too many connections),
# and a serialization failure or deadlock (40001, 40P01).
_TRANSIENT_SQLSTATES = ("08", "57P", "53", "40001", "40P01")
_TRANSIENT_SQLITE = ("database is locked", "unable to open database file", "disk I/O error", "database or disk is full")


def connection_lost(error: Exception, vendor: str) -> bool:
    """Whether waiting fixes ``error`` (the connection went, the server restarts), rather
    than a statement that fails each time (a timeout, a limit, a missing table)."""
    if isinstance(error, InterfaceError):
        return True
    if vendor == "sqlite":
        return any(text in str(error) for text in _TRANSIENT_SQLITE)
    sqlstate = getattr(error.__cause__, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith(_TRANSIENT_SQLSTATES)  # None: the server never answered


def give_back(session_id: int, owner: str, error: Exception) -> str:
    """The unit that met the error was rolled back with its transaction, and every tool
    call is recorded by id: so the session is released to be resumed (by any worker, as
    after a crash) after a backoff that grows with each give-back at the same step, on a
    fresh connection. If the database stays away, its lease runs out and the sweep
    resumes it. Only when it keeps failing at one step does the session fail."""
    for attempt in range(GIVE_BACK_ATTEMPTS):
        connection.close()
        try:
            with transaction.atomic():
                session = Session.objects.select_for_update().select_related("task").get(pk=session_id)
                if session.state != states.RUNNING or session.lease_owner != owner:
                    return "lease lost"
                earlier = SessionEvent.objects.filter(session=session, kind="session.given_back",
                                                      payload__step=session.step).count()
                what = f"the database failed under it: {type(error).__name__}: {error}"
                if earlier + 1 >= GIVE_BACKS_PER_STEP:
                    session_transition(session, states.FAILED, expected=states.RUNNING,
                                       reason=f"{what} ({earlier + 1} times at step {session.step})"[:2000])
                    return "failed"
                delay = min(GIVE_BACK_DELAY_MAX_SECONDS, 2.0 ** earlier)
                Session.objects.filter(pk=session_id).update(
                    lease_owner="", lease_expires_at=timezone.now() + timedelta(seconds=delay))
                session_event_append(session, "session.given_back", {
                    "worker": owner, "step": session.step, "retry_in": delay,
                    "reason": f"the database failed under it: {type(error).__name__}"})
                dispatch.turn_send_on_commit(session_id, countdown=delay)
            return "given back"
        except (OperationalError, InterfaceError):
            time.sleep(min(8.0, 0.5 * 2 ** attempt))
    return "given back (its lease runs out)"


def remove_files_past_the_limit(session_id: int, toolbox: ToolBox, worktree: Worktree) -> None:
    """What passed the disk limit goes: the session's jobs stop, its worktree (never
    committed: the branch keeps what was) and its /tmp are removed."""
    toolbox.jobs.cancel_running("the session's files passed the disk limit")
    for folder in (toolbox.worktree, toolbox.shell_config.place.tmp):
        # A folder the command made unreadable (a hub that is not root) is opened up first.
        subprocess.run(["chmod", "-R", "u+rwx", "--", str(folder)], capture_output=True, check=False)
    try:
        worktree_remove(worktree=worktree)
    except (GitError, WorktreeError, OSError):
        log.exception("session %s: its worktree could not be removed; old_worktrees_remove tries again", session_id)
        return
    shutil.rmtree(toolbox.shell_config.place.tmp, ignore_errors=True)
    Session.objects.filter(pk=session_id).update(worktree_path="")
