"""Worktrees of sessions that ended long ago are removed; their branches keep the work.

Every session gets a worktree in its room's repository. After the session ends, people
still read it for a while (what the agent left), but git's worktree commands, which
every new session of the room runs under the room's lock, slow down with every worktree
kept (docs/operations.md, "A room's worktrees"). So a worktree is kept
``ATRIUM_WORKTREE_KEEP_DAYS`` after its session ended (succeeded, failed, cancelled,
timed out; never one that waits for a person to merge it), then removed by a pass beat
sends to a session worker every ten minutes, a few at a time so that the worker is soon
free again. What the session left uncommitted (a cancel, a time-out or a failure ends it
before its finish commits) is committed on its branch first: the branch keeps all of the
work, and ``git worktree add <path> <branch>`` brings it back.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from agents.tools.disk import WorktreeFull, check_worktree
from rooms.repository.git import GitError
from rooms.repository.worktrees import Worktree, WorktreeError, worktree_commit, worktree_remove
from sessions.models import Job, Session
from sessions.runtime import states

log = logging.getLogger(__name__)

REMOVALS_PER_PASS = 20  # each takes its room's lock for 0.1-1 s
KEEP_DAYS_MAX = 36_500  # beyond a century: keep every worktree


def removal_cutoff(now: datetime, keep_days: float) -> datetime | None:
    """Sessions that ended before this lose their worktree; None (keep every one) when
    ``keep_days`` is not positive, or more than a century."""
    return now - timedelta(days=keep_days) if 0 < keep_days <= KEEP_DAYS_MAX else None


def kept_worktrees_of_ended_sessions(cutoff: datetime):
    """The sessions whose worktree is due, oldest first (the ``session_worktree_kept``
    index holds the ended sessions that still have one)."""
    return (Session.objects.filter(state__in=sorted(states.TERMINAL), finished_at__lt=cutoff)
            .exclude(worktree_path="").select_related("task__room")
            .only("state", "worktree_path", "branch", "task__room__repo_path").order_by("finished_at"))


def old_worktrees_remove(now: datetime | None = None) -> int:
    """One pass: remove the worktrees that are due; how many were removed. One that
    cannot be removed now is logged and tried again at the next pass."""
    cutoff = removal_cutoff(now or timezone.now(), settings.ATRIUM_WORKTREE_KEEP_DAYS)
    if cutoff is None:
        return 0
    removed = 0
    for session in kept_worktrees_of_ended_sessions(cutoff)[:REMOVALS_PER_PASS]:
        worktree = Worktree(path=Path(session.worktree_path), branch=session.branch,
                            repo=Path(session.task.room.repo_path))
        try:
            _remove(session, worktree)
        except (GitError, WorktreeError, OSError):
            log.exception("The worktree of session %s (%s) could not be removed now; the next pass tries again.",
                          session.pk, session.worktree_path)
            continue
        removed += 1
        Session.objects.filter(pk=session.pk, worktree_path=session.worktree_path).update(worktree_path="")
        _remove_session_files(session.pk)
    old_session_files_remove(cutoff)
    return removed


def old_session_files_remove(cutoff: datetime) -> None:
    """The /tmp, jobs and output of sessions with no worktree left to remove (a reviewer
    reads its author's; one stopped past the disk limit lost its own), once they ended
    before ``cutoff``, and of sessions whose room was deleted; and their jobs' records and
    output in the database (sessions/worker/job_journal.py), whichever machine ran them."""
    Job.objects.filter(session__state__in=sorted(states.TERMINAL), session__finished_at__lt=cutoff,
                       session__worktree_path="").delete()
    try:
        ids = sorted(int(entry.name) for entry in os.scandir(settings.JOBS_DIR) if entry.name.isdigit())
    except FileNotFoundError:
        return
    for start in range(0, len(ids), 500):
        batch = ids[start:start + 500]
        known = set(Session.objects.filter(pk__in=batch).values_list("pk", flat=True))
        ended = set(Session.objects.filter(pk__in=batch, state__in=sorted(states.TERMINAL), finished_at__lt=cutoff,
                                           worktree_path="").values_list("pk", flat=True))
        for session_id in batch:
            if session_id in ended or session_id not in known:
                _remove_session_files(session_id)


def _remove_session_files(session_id: int) -> None:
    """Nothing reads them once the session has ended. A folder a command made unreadable
    (a hub that is not root) is opened up first."""
    folder = Path(settings.JOBS_DIR) / str(session_id)
    subprocess.run(["chmod", "-R", "u+rwx", "--", str(folder)], capture_output=True, check=False)
    shutil.rmtree(folder, ignore_errors=True)


def _remove(session: Session, worktree: Worktree) -> None:
    if not (worktree.repo / ".git").is_dir():
        # The room's repository is gone (the room was deleted): its checkout is just files.
        if worktree.path.resolve().is_relative_to(Path(settings.WORKTREES_DIR).resolve()):
            shutil.rmtree(worktree.path, ignore_errors=True)
        return
    if worktree.path.is_dir() and _within_the_disk_limit(worktree.path):
        worktree_commit(worktree=worktree, message=f"Left uncommitted when session {session.pk} ended "
                                                   f"({session.state.replace('_', ' ')})")
    worktree_remove(worktree=worktree)


def _within_the_disk_limit(path: Path) -> bool:
    """What passed the worktree's disk limit (a session stopped for it) is never
    committed into the room's repository."""
    try:
        check_worktree([path], settings.ATRIUM_WORKTREE_MAX_MB << 20)
    except WorktreeFull:
        return False
    return True
