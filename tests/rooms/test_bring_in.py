"""Main merged into a session's branch in its worktree, the conflicts left to the agent,
and the merge recorded by the next commit: on real git repositories."""

from __future__ import annotations

import os

import pytest

from rooms.repository.git import git
from rooms.repository.worktrees import (
    _worktree_text,
    worktree_bring_in,
    worktree_commit,
    worktree_create,
    worktree_merge,
    worktree_unresolved,
)
from tests.rooms.test_worktrees import _commit_all, _main, _session, repo, worktrees_dir  # noqa: F401

# The room lock is the database's on PostgreSQL (rooms.repository.lock).
pytestmark = pytest.mark.django_db


@pytest.fixture
def conflicted(repo, worktrees_dir):  # noqa: F811
    """A session that fixed app.py one way while main, with the intent of task 1, fixed it another."""
    tree = _session(repo, worktrees_dir, 1, {"app.py": "def add(a, b):\n    return a + b\n"})
    intent = repo / ".atrium" / "tasks" / "1" / "intent.md"
    intent.parent.mkdir(parents=True)
    intent.write_text("the person's intent\n")
    (repo / "app.py").write_text("def add(a, b):\n    return sum((a, b))\n")
    _commit_all(repo, "A person fixed it differently")
    assert worktree_merge(repo=repo, branch=tree.branch).status == "conflict"
    return tree


def test_bringing_main_in_leaves_the_conflict_in_the_worktree_and_says_what_merged(repo, conflicted):  # noqa: F811
    brought = worktree_bring_in(worktree=conflicted)
    assert brought.conflicts == ("app.py",)
    assert [line.split(" ", 1)[1] for line in brought.merged_meanwhile] == ["A person fixed it differently"]
    text = (conflicted.path / "app.py").read_text()
    assert "<<<<<<<" in text and "return a + b" in text and "return sum((a, b))" in text
    assert brought.texts["app.py"] == text
    assert worktree_unresolved(worktree=conflicted) == ("app.py",)
    # Asked again (a resumed worker), the same merge is reported, not started twice.
    assert worktree_bring_in(worktree=conflicted).conflicts == ("app.py",)


def test_the_resolution_is_committed_as_the_merge_and_then_merges_into_main_with_mains_intent(
        repo, conflicted):  # noqa: F811
    worktree_bring_in(worktree=conflicted)
    (conflicted.path / "app.py").write_text("def add(a, b):\n    return a + b  # sum((a, b)) was slower\n")
    assert worktree_unresolved(worktree=conflicted) == ()
    commit = worktree_commit(worktree=conflicted, message="resolved")
    parents = git("rev-list", "--parents", "-n", "1", commit, cwd=repo).split()[1:]
    assert len(parents) == 2 and _main(repo) in parents
    result = worktree_merge(repo=repo, branch=conflicted.branch)
    assert result.status == "merged"
    assert (repo / "app.py").read_text().endswith("# sum((a, b)) was slower\n")
    # main's intent file survived the branch's merge commit (the hub keeps main's there).
    assert (repo / ".atrium" / "tasks" / "1" / "intent.md").read_text() == "the person's intent\n"


def test_markers_left_in_a_file_count_as_unresolved_even_when_staged(repo, conflicted):  # noqa: F811
    worktree_bring_in(worktree=conflicted)
    git("add", "app.py", cwd=conflicted.path)  # the agent's shell staged the file with its markers
    # Staged, git no longer lists it as unmerged; the markers still count.
    assert git("diff", "--name-only", "--diff-filter=U", cwd=conflicted.path) == ""
    assert worktree_unresolved(worktree=conflicted) == ("app.py",)


def test_a_branch_main_merges_into_cleanly_is_merged_without_conflicts(repo, worktrees_dir):  # noqa: F811
    tree = worktree_create(repo=repo, worktrees_dir=worktrees_dir, session_id=2)
    (tree.path / "other.py").write_text("y = 2\n")
    worktree_commit(worktree=tree, message="other")
    (repo / "README.md").write_text("# demo, renamed\n")
    _commit_all(repo, "readme")
    brought = worktree_bring_in(worktree=tree)
    assert brought.conflicts == () and len(brought.merged_meanwhile) == 1
    assert worktree_unresolved(worktree=tree) == ()
    assert worktree_commit(worktree=tree, message="main in")
    assert (tree.path / "README.md").read_text() == "# demo, renamed\n"


def test_keeping_the_branchs_own_side_is_still_recorded_as_the_merge(repo, conflicted):  # noqa: F811
    worktree_bring_in(worktree=conflicted)
    (conflicted.path / "app.py").write_text("def add(a, b):\n    return a + b\n")  # as the branch had it
    assert worktree_commit(worktree=conflicted, message="kept mine")
    assert worktree_merge(repo=repo, branch=conflicted.branch).status == "merged"
    assert (repo / "app.py").read_text().endswith("return a + b\n")


def test_the_hub_reads_no_conflicting_path_that_leads_out_of_the_worktree(repo, worktrees_dir, tmp_path):  # noqa: F811
    secret = tmp_path / "secret.txt"
    secret.write_text("<<<<<<< HEAD\nthe hub's secret\n=======\nx\n>>>>>>> main\n")
    tree = worktree_create(repo=repo, worktrees_dir=worktrees_dir, session_id=3)
    (tree.path / "app.py").unlink()
    (tree.path / "app.py").symlink_to(secret)
    worktree_commit(worktree=tree, message="a link where app.py was")
    (repo / "app.py").write_text("def add(a, b):\n    return sum((a, b))\n")
    _commit_all(repo, "main changed app.py")
    assert worktree_merge(repo=repo, branch=tree.branch).status == "conflict"
    brought = worktree_bring_in(worktree=tree)
    assert "secret" not in "".join(brought.texts.values())
    os.mkfifo(tree.path / "pipe")  # never read (a read would block the worker)
    assert _worktree_text(tree.path, "pipe") is None
    assert _worktree_text(tree.path, "app.py") is None or "secret" not in _worktree_text(tree.path, "app.py")
