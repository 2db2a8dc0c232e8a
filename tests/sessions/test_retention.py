"""A pass beat sends every ten minutes removes the worktrees of sessions that ended more than
ATRIUM_WORKTREE_KEEP_DAYS ago, in a real room repository; branches stay, sessions still
running or waiting for a person to merge keep theirs, and the query is served by an index."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.conf import settings as hub_settings
from django.db import connection, transaction
from django.utils import timezone

from rooms.repository.git import git
from rooms.repository.worktrees import worktree_create
from sessions.models import Job, JobOutput, Session, Task
from sessions.retention import (
    kept_worktrees_of_ended_sessions,
    old_worktrees_remove,
    removal_cutoff,
)
from sessions.runtime import states
from sessions.tasks import remove_old_worktrees

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_the_cutoff_is_the_days_kept_before_now_and_nothing_is_removed_without_days():
    assert removal_cutoff(NOW, 7) == NOW - timedelta(days=7)
    assert removal_cutoff(NOW, 0.5) == NOW - timedelta(hours=12)
    assert removal_cutoff(NOW, 0) is None and removal_cutoff(NOW, -1) is None


@pytest.fixture
def sessions_with_worktrees(demo_room, replay_agent, person, tmp_path):
    """Sessions of the demo room, each with a real worktree and a commit on its branch."""
    repo = Path(demo_room.repo_path)
    task = Task.objects.create(room=demo_room, title="t", objective="o", created_by=person)

    def session(state: str, ended_days_ago: float | None, *, committed: bool = True) -> Session:
        row = Session.objects.create(task=task, agent=replay_agent, state=state,
                                     attempt=Session.objects.filter(task=task).count() + 1,
                                     finished_at=None if ended_days_ago is None
                                     else timezone.now() - timedelta(days=ended_days_ago))
        tree = worktree_create(repo=repo, worktrees_dir=tmp_path / "worktrees", session_id=row.pk)
        (tree.path / f"work_{row.pk}.txt").write_text("done\n")
        if committed:
            git("add", "-A", cwd=tree.path)
            git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "work", cwd=tree.path)
        Session.objects.filter(pk=row.pk).update(worktree_path=str(tree.path), branch=tree.branch)
        row.refresh_from_db()
        return row

    return {
        "old_success": session(states.SUCCEEDED, 9),
        "old_failure": session(states.FAILED, 30),
        "old_cancelled_mid_edit": session(states.CANCELLED, 10, committed=False),
        "recent": session(states.SUCCEEDED, 1),
        "old_needs_merge": session(states.NEEDS_MERGE, 20),
        "running": session(states.RUNNING, None),
    }


def test_old_ended_sessions_lose_their_worktree_and_keep_their_branch(sessions_with_worktrees, settings):
    settings.ATRIUM_WORKTREE_KEEP_DAYS = 7
    rows = sessions_with_worktrees
    assert old_worktrees_remove() == 3
    for name, row in rows.items():
        fresh = Session.objects.get(pk=row.pk)
        gone = name.startswith("old_") and name != "old_needs_merge"
        assert Path(row.worktree_path).exists() is not gone, name
        assert (fresh.worktree_path == "") is gone, name
        repo = Path(row.task.room.repo_path)
        # The work stays on the branch, also what a cancel left uncommitted.
        assert f"work_{row.pk}.txt" in git("ls-tree", "--name-only", row.branch, cwd=repo), name
    cancelled = rows["old_cancelled_mid_edit"]
    assert git("log", "-1", "--format=%s", cancelled.branch, cwd=Path(cancelled.task.room.repo_path)).strip() == (
        f"Left uncommitted when session {cancelled.pk} ended (cancelled)")
    listed = git("worktree", "list", "--porcelain", cwd=Path(rows["recent"].task.room.repo_path))
    assert rows["recent"].worktree_path in listed and rows["old_success"].worktree_path not in listed
    assert old_worktrees_remove() == 0  # looked at once


def test_with_no_days_to_keep_every_worktree_stays(sessions_with_worktrees, settings):
    settings.ATRIUM_WORKTREE_KEEP_DAYS = 0
    assert old_worktrees_remove() == 0
    assert all(Path(row.worktree_path).exists() for row in sessions_with_worktrees.values())


def test_a_worktree_already_gone_is_cleared_without_an_error(sessions_with_worktrees, settings):
    settings.ATRIUM_WORKTREE_KEEP_DAYS = 7
    row = sessions_with_worktrees["old_success"]
    git("worktree", "remove", "--force", row.worktree_path, cwd=Path(row.task.room.repo_path))
    assert old_worktrees_remove() == 3
    assert Session.objects.get(pk=row.pk).worktree_path == ""


def test_the_checkouts_of_a_room_whose_repository_is_gone_are_deleted(sessions_with_worktrees, settings, tmp_path):
    settings.ATRIUM_WORKTREE_KEEP_DAYS, settings.WORKTREES_DIR = 7, tmp_path / "worktrees"
    row = sessions_with_worktrees["old_success"]
    shutil.rmtree(Path(row.task.room.repo_path))
    assert old_worktrees_remove() == 3
    assert not Path(row.worktree_path).exists() and Session.objects.get(pk=row.pk).worktree_path == ""
    assert Path(sessions_with_worktrees["recent"].worktree_path).exists()


def test_a_worktree_that_cannot_be_removed_now_is_kept_for_the_next_pass(sessions_with_worktrees, settings):
    settings.ATRIUM_WORKTREE_KEEP_DAYS = 7
    row = sessions_with_worktrees["old_success"]
    admin = next(p.parent for p in (Path(row.task.room.repo_path) / ".git" / "worktrees").glob("*/gitdir")
                 if Path(p.read_text().strip()).parent == Path(row.worktree_path))
    (admin / "index.lock").write_text("")  # a git command of the worktree's that never ended
    assert old_worktrees_remove() == 2
    assert Session.objects.get(pk=row.pk).worktree_path == row.worktree_path and Path(row.worktree_path).exists()
    (admin / "index.lock").unlink()
    assert old_worktrees_remove() == 1 and not Path(row.worktree_path).exists()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="EXPLAIN's output is PostgreSQL's")
def test_the_pass_reads_the_ended_sessions_that_keep_a_worktree_from_their_index(sessions_with_worktrees):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = kept_worktrees_of_ended_sessions(timezone.now()).explain()
    assert "session_worktree_kept" in plan, plan


def test_beat_sends_the_pass_to_a_session_worker_not_the_sweeper():
    entry = hub_settings.CELERY_BEAT_SCHEDULE["remove-old-worktrees"]
    assert entry["task"] == remove_old_worktrees.name and entry["schedule"] == 600.0
    assert remove_old_worktrees.name not in hub_settings.CELERY_TASK_ROUTES  # the sweeper's one process stays free


def test_the_files_of_sessions_without_a_worktree_go_too(demo_room, replay_agent, person, settings, tmp_path):
    """A reviewer reads its author's worktree and has none of its own; a session stopped past
    the disk limit lost its own: their /tmp and job output still go once they are due, as do
    those of sessions whose room was deleted. A running session's stay."""
    settings.ATRIUM_WORKTREE_KEEP_DAYS, settings.JOBS_DIR = 7, tmp_path / "jobs"
    task = Task.objects.create(room=demo_room, title="t", objective="o", created_by=person)

    def session_files(state: str, ended_days_ago: float | None) -> Path:
        row = Session.objects.create(task=task, agent=replay_agent, state=state,
                                     attempt=Session.objects.filter(task=task).count() + 1,
                                     finished_at=None if ended_days_ago is None
                                     else timezone.now() - timedelta(days=ended_days_ago))
        folder = tmp_path / "jobs" / str(row.pk)
        job = Job.objects.create(session=row, handle="job-1", call_id="c1", command="make", host="elsewhere",
                                 created_at=0, beat_at=timezone.now())
        JobOutput.objects.create(job=job, index=0, data=b"made\n")
        (folder / "tmp" / "locked").mkdir(parents=True)
        (folder / "tmp" / "locked" / "big").write_bytes(b"x" * 1000)
        (folder / "tmp" / "locked").chmod(0)  # as a command may leave it
        return folder

    old_reviewer, recent, running = (session_files(states.SUCCEEDED, 9), session_files(states.SUCCEEDED, 1),
                                     session_files(states.RUNNING, None))
    orphan = tmp_path / "jobs" / "999999"  # its session (and room) deleted
    orphan.mkdir()
    assert old_worktrees_remove() == 0
    assert not old_reviewer.exists() and not orphan.exists()
    assert recent.exists() and running.exists()
    # Its jobs' records and output go with it, wherever they ran.
    kept = JobOutput.objects.values_list("job__session__finished_at", flat=True)
    assert len(kept) == 2 and None in kept and Job.objects.count() == 2
