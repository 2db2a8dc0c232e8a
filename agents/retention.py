"""Worktrees of sessions that ended long ago are removed; their branches stay.

Every session gets a worktree in its room's repository. After the session ends, people
and tests still read it for a while (what the agent left, the sandbox's checks), but git's
worktree commands, which every new session of the room runs under the room's lock, slow
down with every worktree kept (docs/operations.md, "A room's worktrees"). So a worktree
is kept ``ATRIUM_WORKTREE_KEEP_DAYS`` after its session ended (succeeded, failed,
cancelled, timed out; never one that waits for a person to merge it), then removed by
a pass beat sends every ten minutes to a session worker, a few at a time so that the
worker is soon free again. The branch keeps the work: ``git worktree add`` brings it back.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from agents.models import Session
from agents.runtime import states
from rooms.repository.git import GitError
from rooms.repository.worktrees import Worktree, WorktreeError, worktree_remove

log = logging.getLogger(__name__)

REMOVALS_PER_PASS = 20  # each takes its room's lock for 0.1-1 s


def removal_cutoff(now: datetime, keep_days: float) -> datetime | None:
    """Sessions that ended before this lose their worktree; None (keep every one) when
    ``keep_days`` is not positive."""
    return now - timedelta(days=keep_days) if keep_days > 0 else None


def kept_worktrees_of_ended_sessions(cutoff: datetime):
    """The sessions whose worktree is due, oldest first (the ``session_worktree_kept``
    index holds the ended sessions that still have one)."""
    return (Session.objects.filter(state__in=sorted(states.TERMINAL), finished_at__lt=cutoff)
            .exclude(worktree_path="").select_related("task__room")
            .only("worktree_path", "branch", "task__room__repo_path").order_by("finished_at"))


def old_worktrees_remove(now: datetime | None = None) -> int:
    """One pass: remove the worktrees that are due; how many were removed."""
    cutoff = removal_cutoff(now or timezone.now(), settings.ATRIUM_WORKTREE_KEEP_DAYS)
    if cutoff is None:
        return 0
    removed = 0
    for session in kept_worktrees_of_ended_sessions(cutoff)[:REMOVALS_PER_PASS]:
        worktree = Worktree(path=Path(session.worktree_path), branch=session.branch,
                            repo=Path(session.task.room.repo_path))
        try:
            worktree_remove(worktree=worktree)
            removed += 1
        except (GitError, WorktreeError, OSError):
            log.exception("The worktree of session %s (%s) could not be removed; it is left for a person.",
                          session.pk, session.worktree_path)
        # Looked at once, removed or not: a failure is in the log, not retried every pass.
        Session.objects.filter(pk=session.pk, worktree_path=session.worktree_path).update(worktree_path="")
    return removed
