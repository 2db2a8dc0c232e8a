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

A worker that keeps its own copies of the rooms' repositories (``ATRIUM_HUB_URL``) has
its sessions' worktrees on its machine, where no other process can remove them: there,
the pass looks in its own worktrees folder instead, and every worker process makes it
now and then after a session's turn (``machine_pass_now_and_then``). Each unit of such
a session that called tools was pushed as it ran, and the lease that would let this
worker push more is gone: nothing is committed before the removal.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from agents.tools.disk import WorktreeFull, check_worktree
from rooms.repository.git import GitError, git
from rooms.repository.lock import room_repo_lock
from rooms.repository.maintenance import repository_repack
from rooms.repository.worktrees import Worktree, WorktreeError, worktree_commit, worktree_remove
from sessions.models import Job, Session
from sessions.runtime import states

log = logging.getLogger(__name__)

REMOVALS_PER_PASS = 20  # each takes its room's lock for 0.1-1 s
MACHINE_PASS_SECONDS = 600.0  # as often as beat sends its pass
_next_machine_pass = 0.0
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
    if settings.HUB_URL:
        return _machine_worktrees_remove(cutoff)
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


def machine_pass_now_and_then() -> None:
    """After a session's turn, on a worker that keeps its own copies: the pass, once in
    ``MACHINE_PASS_SECONDS`` per process (beat's pass reaches only one machine)."""
    global _next_machine_pass
    if not settings.HUB_URL or time.monotonic() < _next_machine_pass:
        return
    _next_machine_pass = time.monotonic() + MACHINE_PASS_SECONDS
    try:
        old_worktrees_remove()
    except Exception:  # the session's turn is done whatever this does; the next pass tries again
        log.exception("this machine's old worktrees could not be removed now")


def _machine_worktrees_remove(cutoff: datetime) -> int:
    """This machine's worktrees (sessions' and reviewers') of sessions that ended before
    ``cutoff`` or are gone, removed from its copies with their branches (the hub keeps
    them); how many."""
    found = _worktrees_here()
    sessions = Session.objects.filter(pk__in=set(found.values())).select_related("task__room").only(
        "state", "finished_at", "task__room__repo_path", "worktree_path", "branch")
    by_id = {session.pk: session for session in sessions}
    removed = 0
    for path, session_id in found.items():
        session = by_id.get(session_id)
        if session is not None and not (session.state in states.TERMINAL and session.finished_at < cutoff):
            continue
        copy = Path(settings.COPIES_DIR) / Path(session.task.room.repo_path).name if session else None
        try:
            if copy is not None and (copy / ".git").is_dir():
                worktree_remove(worktree=Worktree(path=path, branch=session.branch, repo=copy),
                                delete_branch=path.name == str(session_id) and bool(session.branch))
            else:
                shutil.rmtree(path, ignore_errors=True)
        except (GitError, WorktreeError, OSError):
            log.exception("The worktree %s could not be removed now; the next pass tries again.", path)
            continue
        Session.objects.filter(pk=session_id, worktree_path=str(path)).update(worktree_path="")
        _remove_session_files(session_id)
        removed += 1
        if removed == REMOVALS_PER_PASS:
            break
    old_session_files_remove(cutoff)
    _copies_tidied()
    return removed


def _copies_tidied() -> None:
    """The refs this machine's copies took in for sessions that ended (a reviewer's, a
    takeover's) dropped, and each copy repacked when it needs it: nothing else packs
    them (the hub's git runs no automatic gc)."""
    copies = [copy for copy in Path(settings.COPIES_DIR).glob("*") if (copy / ".git").is_dir()]
    for copy in copies:
        refs = git("for-each-ref", "--format=%(refname)", "refs/atrium/", cwd=copy).split()
        of = {ref: int(found.group(1)) for ref in refs if (found := re.search(r"session-(\d+)$", ref))}
        live = set(Session.objects.filter(pk__in=set(of.values())).exclude(state__in=sorted(states.TERMINAL))
                   .values_list("pk", flat=True))
        for ref, session_id in of.items():
            if session_id not in live:
                git("update-ref", "-d", ref, cwd=copy)
        try:
            with room_repo_lock(copy):
                repository_repack(copy)
        except GitError:
            log.exception("the copy %s was not repacked; the next pass tries again", copy)


def _worktrees_here() -> dict[Path, int]:
    """The worktrees in this machine's folder, with the session each is for."""
    try:
        entries = list(os.scandir(settings.WORKTREES_DIR))
    except FileNotFoundError:
        return {}
    found = {}
    for entry in entries:
        number = entry.name.removeprefix("review-")
        if number.isdigit() and entry.is_dir(follow_symlinks=False):
            found[Path(os.path.realpath(entry.path))] = int(number)
    return found


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
