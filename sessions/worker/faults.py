"""What a worker does when the database or the disk fails under a session it runs:
give back what waiting fixes (a lost connection, a restart, a full disk), and remove
what passed the disk limit. Called from sessions.worker.run's run of a claimed session."""

from __future__ import annotations

import errno
import logging
import shutil
import subprocess
import time
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

from agents.tools.box import ToolBox
from agents.tools.outcome import out_of_space
from rooms.repository.git import GitError
from rooms.repository.worktrees import Worktree, WorktreeError, worktree_remove
from sessions import dispatch
from sessions.events import session_event_append
from sessions.models import Session, SessionEvent
from sessions.runtime import states

log = logging.getLogger(__name__)

GIVE_BACK_ATTEMPTS = 5  # tries at writing the give-back itself
GIVE_BACK_DELAY_MAX_SECONDS = 60.0
DISK_FREE_BYTES = 1 << 20  # a disk-full wait is over once the folder has this much free


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


def disk_full(error: BaseException) -> bool:
    """Whether ``error``, or what it was raised from, is a disk with no space left: a
    write of the hub's own, or of a git it ran."""
    return any((isinstance(seen, OSError) and out_of_space(seen))
               or (isinstance(seen, GitError) and "No space left on device" in str(seen)) for seen in _chain(error))


def _chain(error: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    seen: BaseException | None = error
    while seen is not None and not any(seen is earlier for earlier in chain):  # a chain may loop
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return chain


def _full_folder(error: BaseException) -> str:
    """The nearest existing folder of the file a full disk refused, where the error names one."""
    name = next((e.filename for e in _chain(error) if isinstance(e, OSError) and isinstance(e.filename, str)), None)
    if not name:
        return ""
    folder = Path(name).parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return str(folder)


def space_still_short(session_id: int) -> Exception | None:
    """The error a session waits out, if its disk-full wait is not over: the folder the
    error named, or any of the hub's own (where a write that names no file went), has
    less than DISK_FREE_BYTES free. None: run it."""
    last = (SessionEvent.objects.filter(session_id=session_id).exclude(kind="session.claimed")
            .order_by("-seq").values_list("kind", "payload").first())
    if last is None or last[0] != "session.waiting":
        return None
    named = [last[1]["folder"]] if last[1].get("folder") else []
    for folder in (*named, settings.JOBS_DIR, settings.WORKTREES_DIR, settings.REPOS_DIR, settings.COPIES_DIR,
                   settings.DATA_DIR):
        try:
            if shutil.disk_usage(folder).free < DISK_FREE_BYTES:
                return OSError(errno.ENOSPC, "No space left on device", str(folder))
        except OSError:
            continue
    return None


def give_back(session_id: int, owner: str, error: Exception, *, why: str = "the database failed under it") -> str:
    """The unit that met the error was rolled back with its transaction, and every tool
    call is recorded by id: so the session is released to be resumed (by any worker, as
    after a crash) after a backoff that grows with each give-back at the same step, on a
    fresh connection. If the database stays away, its lease runs out and the sweep
    resumes it. However long it takes, it is never failed for it (its time limit still
    holds). The same for the hub's git remote, to a worker that keeps its own copies."""

    def delay(session: Session) -> float:
        earlier = SessionEvent.objects.filter(session=session, kind="session.given_back",
                                              payload__step=session.step).count()
        return min(GIVE_BACK_DELAY_MAX_SECONDS, 2.0 ** earlier)

    return _release(session_id, owner, "session.given_back",
                    f"{why}: {type(error).__name__}", delay)


def wait_for_space(session_id: int, owner: str, error: Exception) -> str:
    """A disk with no space left: the unit was rolled back (a write that fails changes
    nothing the session has recorded); the session is released and tried again every
    ATRIUM_DISK_RETRY_SECONDS until its writes fit, never failed for it. Said once in
    its log, not at every try."""

    def delay(session: Session) -> float:
        return float(settings.ATRIUM_DISK_RETRY_SECONDS)

    return _release(session_id, owner, "session.waiting",
                    f"the disk is full ({error}); it goes on where it was once space is freed", delay,
                    said_once=True, folder=_full_folder(error))


def _release(session_id: int, owner: str, kind: str, reason: str, delay_of, *, said_once: bool = False,
             folder: str = "") -> str:
    for attempt in range(GIVE_BACK_ATTEMPTS):
        connection.close()
        try:
            with transaction.atomic():
                session = Session.objects.select_for_update().select_related("task").get(pk=session_id)
                if session.state != states.RUNNING or session.lease_owner != owner:
                    return "lease lost"
                delay = delay_of(session)
                Session.objects.filter(pk=session_id).update(
                    lease_owner="", lease_expires_at=timezone.now() + timedelta(seconds=delay))
                last = (SessionEvent.objects.filter(session=session).exclude(kind="session.claimed")
                        .order_by("-seq").values_list("kind", flat=True).first())
                if not (said_once and last == kind):
                    session_event_append(session, kind, {"worker": owner, "step": session.step, "retry_in": delay,
                                                         "reason": reason[:500], **({"folder": folder} if folder else {})})
                dispatch.turn_send_on_commit(session_id, countdown=delay)
            return "given back"
        except (OperationalError, InterfaceError):
            time.sleep(min(8.0, 0.5 * 2 ** attempt))
    return "given back (its lease runs out)"


def remove_files_past_the_limit(session_id: int, toolbox: ToolBox, worktree: Worktree) -> None:
    """What passed the disk limit goes: the session's jobs stop, its worktree (never
    committed: the branch keeps what was), its /tmp and its jobs' output are removed."""
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
    shutil.rmtree(toolbox.state_dir / "jobs", ignore_errors=True)  # their output counted too
    Session.objects.filter(pk=session_id).update(worktree_path="")
