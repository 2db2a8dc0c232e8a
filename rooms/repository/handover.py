"""Worktrees handed from one machine to another (issue 32): the room repository's own
worktree of a session released for a worker elsewhere that takes the session on, and a
reviewer's checkout of its own of the work it reviews."""

from __future__ import annotations

import os
from pathlib import Path

from rooms.repository.git import git
from rooms.repository.lock import room_repo_lock
from rooms.repository.worktrees import (
    Worktree,
    WorktreeError,
    admin_dir,
    merge_under_way,
    registered_worktrees,
    worktree_commit,
    worktree_remove_locked,
)


def worktree_reading(*, repo: Path, path: Path, commit: str, branch: str) -> Worktree:
    """A checkout of ``commit`` at ``path`` on no branch (a reviewer's copy of the work it
    reviews; ``branch``: the work's), made, or moved to ``commit`` where it is (the folder
    stays, and what watches it goes on watching); whatever else was in it goes."""
    repo = Path(os.path.realpath(repo))
    path.parent.mkdir(parents=True, exist_ok=True)
    reading = Worktree(path=Path(os.path.realpath(path)), branch=branch, repo=repo)
    with room_repo_lock(repo):
        if reading.path in registered_worktrees(repo):
            where = (f"--git-dir={admin_dir(reading)}", f"--work-tree={reading.path}")
            git(*where, "checkout", "--quiet", "--force", "--detach", commit, cwd=reading.path)
            git(*where, "clean", "-ffdxq", cwd=reading.path)
        else:
            worktree_remove_locked(reading, delete_branch=False)
            git("worktree", "add", "--quiet", "--detach", str(reading.path), commit, cwd=repo)
    return reading


def reading_at(reading: Worktree) -> str:
    """The commit a reviewer's checkout shows (as its repository records it, never found
    through the checkout's own ``.git``); empty if it is not a checkout of the repository."""
    try:
        return git(f"--git-dir={admin_dir(reading)}", "rev-parse", "--verify", "--quiet", "HEAD",
                   cwd=reading.repo, check=False).strip()
    except WorktreeError:
        return ""


def worktree_release(*, repo: Path, branch: str, message: str) -> bool:
    """The room repository's own worktree of ``branch``, if one has it checked out (a
    worker beside the repository ran the session): what it holds committed on the branch
    (not a merge under way: its files may hold markers), then removed, so a worker on
    another machine takes the session on from the branch and may push to it. Whether
    there was one."""
    repo = Path(os.path.realpath(repo))
    released = False
    with room_repo_lock(repo):
        for path, checked_out in registered_worktrees(repo).items():
            if checked_out != branch or path == repo:
                continue
            worktree = Worktree(path=path, branch=branch, repo=repo)
            if path.is_dir() and not merge_under_way(worktree):
                worktree_commit(worktree=worktree, message=message)
            worktree_remove_locked(worktree, delete_branch=False)
            released = True
    return released
