"""What sessions did in a room repository, read without changing it (rooms/repository/activity.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooms.repository.activity import (
    branch_tip,
    fork_point,
    main_commits_since,
)
from rooms.repository.git import git
from rooms.repository.worktrees import (
    worktree_commit,
    worktree_create,
    worktree_merge,
)
from tests.rooms.test_worktrees import _commit_all, _main

# The room lock is the database's on PostgreSQL (rooms.repository.lock).
pytestmark = pytest.mark.django_db


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repos" / "demo"
    path.mkdir(parents=True)
    git("init", "--quiet", "--initial-branch", "main", cwd=path)
    (path / "app.py").write_text("def add(a, b):\n    return a - b\n")
    (path / "README.md").write_text("# demo\n")
    _commit_all(path, "Initial commit")
    return path


@pytest.fixture
def worktrees_dir(tmp_path: Path) -> Path:
    return tmp_path / "worktrees"


def test_main_commits_since_a_base_list_merges_oldest_first_without_hub_only_commits(repo, worktrees_dir):
    base = _main(repo)
    worktree = worktree_create(repo=repo, worktrees_dir=worktrees_dir, session_id=1)
    assert branch_tip(repo, worktree.branch) == base
    (worktree.path / "mean.py").write_text("def mean(xs): ...\n")
    worktree_commit(worktree=worktree, message="mean")
    worktree_merge(repo=repo, branch=worktree.branch, message="Merge atrium/session-1: Add mean")
    (repo / ".atrium").mkdir()
    (repo / ".atrium" / "intent.md").write_text("# Intent\n")
    _commit_all(repo, "Intent of task 2")
    (repo / "README.md").write_text("# by hand\n")
    _commit_all(repo, "A person's commit")
    commits = main_commits_since(repo, base, "main")
    assert [(c.subject, c.files) for c in commits] == [
        ("Merge atrium/session-1: Add mean", ("mean.py",)), ("A person's commit", ("README.md",))]
    assert main_commits_since(repo, "0" * 40, "main") == ()
    assert main_commits_since(repo, _main(repo), "main") == ()


def test_a_session_without_a_recorded_base_is_read_from_where_its_branch_left_main(repo, worktrees_dir):
    base = _main(repo)
    worktree = worktree_create(repo=repo, worktrees_dir=worktrees_dir, session_id=1)
    (repo / "later.py").write_text("x = 1\n")
    _commit_all(repo, "later")
    assert fork_point(repo, worktree.branch, "main") == base
    assert git("rev-parse", "main", cwd=repo).strip() != base
