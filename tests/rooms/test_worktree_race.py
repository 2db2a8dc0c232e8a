"""Several processes creating, committing in, merging and removing worktrees of one room
at once: every git operation on the room repository holds the room lock, so none of
them breaks another (before, a `worktree prune` racing an `add` or `move` failed about
1 session in 50 at its first claim)."""

from __future__ import annotations

import multiprocessing
import os
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from rooms.repository.git import git
from rooms.repository.worktrees import (
    worktree_commit,
    worktree_create,
    worktree_merge,
    worktree_remove,
)
from tests.conftest import subprocess_database_url

# The room lock is the database's on PostgreSQL (rooms.repository.lock).
pytestmark = pytest.mark.django_db

PROCESSES = 4
SESSIONS = int(os.environ.get("ATRIUM_WORKTREE_RACE_SESSIONS", "200"))


def _one_session(repo: str, worktrees_dir: str, session_id: int) -> str:
    """What a worker does with a session's worktree, start to end; "" or the failure."""
    try:
        worktree = worktree_create(repo=Path(repo), worktrees_dir=Path(worktrees_dir), session_id=session_id)
        again = worktree_create(repo=Path(repo), worktrees_dir=Path(worktrees_dir), session_id=session_id)
        assert again == worktree  # a resumed session finds its worktree again
        (worktree.path / f"s{session_id}.txt").write_text(f"{session_id}\n")
        assert worktree_commit(worktree=worktree, message=f"session {session_id}")
        result = worktree_merge(repo=Path(repo), branch=worktree.branch)
        assert result.status == "merged", result
        worktree_remove(worktree=worktree, delete_branch=True)
        return ""
    except Exception:
        return f"session {session_id}: {traceback.format_exc()}"


def test_processes_racing_on_one_room_repository_never_fail(tmp_path, monkeypatch):
    # The room lock is the database's on PostgreSQL: the processes lock in the tests' one.
    monkeypatch.setenv("DATABASE_URL", subprocess_database_url())
    repo = tmp_path / "repos" / "room"
    repo.mkdir(parents=True)
    git("init", "--quiet", "--initial-branch", "main", cwd=repo)
    (repo / "README.md").write_text("# room\n")
    git("add", "--all", cwd=repo)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "Initial commit", cwd=repo)
    worktrees = tmp_path / "worktrees"

    with ProcessPoolExecutor(PROCESSES, mp_context=multiprocessing.get_context("spawn")) as pool:
        failures = [f for f in pool.map(_one_session, [str(repo)] * SESSIONS, [str(worktrees)] * SESSIONS,
                                         range(1, SESSIONS + 1)) if f]

    assert failures == [], f"{len(failures)} of {SESSIONS} failed; first:\n{failures[0]}"
    merged = {p.name for p in repo.glob("s*.txt")}
    assert merged == {f"s{n}.txt" for n in range(1, SESSIONS + 1)}
    assert git("worktree", "list", "--porcelain", cwd=repo).count("worktree ") == 1
    assert git("status", "--porcelain", cwd=repo) == ""
    git("fsck", "--no-progress", cwd=repo)
