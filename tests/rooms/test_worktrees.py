"""Session worktrees on real git repositories: create, commit, merge one at a time, remove."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from rooms.repository.git import git
from rooms.repository.lock import room_repo_lock
from rooms.repository.worktrees import (
    Worktree,
    WorktreeError,
    session_branch,
    worktree_commit,
    worktree_create,
    worktree_merge,
    worktree_remove,
)

# The room lock is the database's on PostgreSQL (rooms.repository.lock).
pytestmark = pytest.mark.django_db


def _commit_all(path: Path, message: str) -> str:
    git("add", "--all", cwd=path)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", message, cwd=path)
    return git("rev-parse", "HEAD", cwd=path).strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A room repository as rooms.repository.prepare makes it: non-bare, ``main`` checked out."""
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


def _main(repo: Path) -> str:
    return git("rev-parse", "main", cwd=repo).strip()


def _session(repo: Path, worktrees_dir: Path, session_id: int, files: dict[str, str]) -> Worktree:
    worktree = worktree_create(repo=repo, worktrees_dir=worktrees_dir, session_id=session_id)
    for name, content in files.items():
        (worktree.path / name).write_text(content)
    assert worktree_commit(worktree=worktree, message=f"session {session_id}")
    return worktree


def test_create_checks_out_main_on_the_sessions_own_branch(repo, worktrees_dir):
    worktree = worktree_create(repo=repo, worktrees_dir=worktrees_dir, session_id=7)
    assert worktree.path == (worktrees_dir / "7").resolve()
    assert worktree.branch == "atrium/session-7" == session_branch(7)
    assert (worktree.path / "app.py").read_text().startswith("def add")
    assert git("symbolic-ref", "--short", "HEAD", cwd=worktree.path).strip() == worktree.branch
    assert git("rev-parse", "HEAD", cwd=worktree.path).strip() == _main(repo)


def test_create_again_finds_the_same_worktree_with_its_work(repo, worktrees_dir):
    first = worktree_create(repo=repo, worktrees_dir=worktrees_dir, session_id=7)
    (first.path / "wip.txt").write_text("unsaved work\n")
    again = worktree_create(repo=repo, worktrees_dir=worktrees_dir, session_id=7)
    assert again == first
    assert (again.path / "wip.txt").read_text() == "unsaved work\n"


def test_create_recovers_from_a_crash_mid_checkout(repo, worktrees_dir):
    worktrees_dir.mkdir()
    partial = worktrees_dir / ".7.partial"
    git("worktree", "add", "--quiet", "-b", "atrium/session-7", str(partial), "main", cwd=repo)
    (partial / "app.py").unlink()  # a checkout cut short
    worktree = worktree_create(repo=repo, worktrees_dir=worktrees_dir, session_id=7)
    assert not partial.exists()
    assert (worktree.path / "app.py").exists()
    assert git("status", "--porcelain", cwd=worktree.path) == ""


def test_create_after_the_folder_was_lost_keeps_the_branchs_commits(repo, worktrees_dir):
    worktree = _session(repo, worktrees_dir, 3, {"notes.txt": "kept\n"})
    shutil.rmtree(worktree.path)
    again = worktree_create(repo=repo, worktrees_dir=worktrees_dir, session_id=3)
    assert (again.path / "notes.txt").read_text() == "kept\n"


def test_create_refuses_a_folder_that_is_not_its_worktree(repo, worktrees_dir):
    (worktrees_dir / "9").mkdir(parents=True)
    (worktrees_dir / "9" / "precious.txt").write_text("someone's\n")
    with pytest.raises(WorktreeError, match="is not a worktree"):
        worktree_create(repo=repo, worktrees_dir=worktrees_dir, session_id=9)
    assert (worktrees_dir / "9" / "precious.txt").exists()


def test_commit_records_every_change_on_the_branch_only(repo, worktrees_dir):
    worktree = worktree_create(repo=repo, worktrees_dir=worktrees_dir, session_id=1)
    main_before = _main(repo)
    assert worktree_commit(worktree=worktree, message="nothing") is None
    (worktree.path / "app.py").write_text("def add(a, b):\n    return a + b\n")
    (worktree.path / "new.py").write_text("x = 1\n")
    (worktree.path / "README.md").unlink()
    sha = worktree_commit(worktree=worktree, message="Fix add", author="Fixer <fixer@atrium>")
    assert sha == git("rev-parse", worktree.branch, cwd=repo).strip()
    assert git("log", "-1", "--format=%an|%s", sha, cwd=repo).strip() == "Fixer|Fix add"
    changed = git("diff", "--name-status", main_before, sha, cwd=repo).split()
    assert changed == ["D", "README.md", "M", "app.py", "A", "new.py"]
    assert _main(repo) == main_before


def test_merge_makes_a_merge_commit_on_main_and_updates_the_room_checkout(repo, worktrees_dir):
    worktree = _session(repo, worktrees_dir, 1, {"app.py": "def add(a, b):\n    return a + b\n"})
    main_before = _main(repo)
    result = worktree_merge(repo=repo, branch=worktree.branch, message="Merge session 1")
    assert result.status == "merged" and result.merged
    assert result.main_before == main_before and result.main_after == _main(repo)
    parents = git("rev-list", "--parents", "-n", "1", "main", cwd=repo).split()[1:]
    assert parents == [main_before, git("rev-parse", worktree.branch, cwd=repo).strip()]
    assert (repo / "app.py").read_text().endswith("a + b\n")
    assert git("status", "--porcelain", cwd=repo) == ""
    # Merging again (a worker retrying after a crash) changes nothing.
    again = worktree_merge(repo=repo, branch=worktree.branch)
    assert again.status == "up_to_date" and again.main_after == result.main_after


def test_a_conflicting_merge_reports_the_paths_and_leaves_main_untouched(repo, worktrees_dir):
    worktree = _session(repo, worktrees_dir, 1, {"app.py": "def add(a, b):\n    return a + b\n",
                                                 "other.py": "y = 2\n"})
    (repo / "app.py").write_text("def add(a, b):\n    return sum((a, b))\n")
    main_before = _commit_all(repo, "A person fixed it differently")
    result = worktree_merge(repo=repo, branch=worktree.branch)
    assert result.status == "conflict" and not result.merged
    assert result.conflicts == ("app.py",)
    assert "CONFLICT" in result.detail
    assert _main(repo) == main_before == result.main_after
    assert git("status", "--porcelain", cwd=repo) == ""
    assert not (repo / ".git" / "MERGE_HEAD").exists()
    assert (repo / "app.py").read_text().endswith("sum((a, b))\n")


def test_merges_are_serialised_by_the_room_lock(repo, worktrees_dir):
    first = _session(repo, worktrees_dir, 1, {"one.py": "1\n"})
    second = _session(repo, worktrees_dir, 2, {"two.py": "2\n"})
    main_before = _main(repo)
    results = {}

    def merge(worktree: Worktree) -> None:
        results[worktree.branch] = worktree_merge(repo=repo, branch=worktree.branch)

    threads = [threading.Thread(target=merge, args=(w,)) for w in (first, second)]
    with room_repo_lock(repo):  # e.g. an intent-file commit in progress
        for thread in threads:
            thread.start()
        time.sleep(0.5)
        assert results == {} and _main(repo) == main_before
    for thread in threads:
        thread.join(timeout=30)
    a, b = sorted(results.values(), key=lambda r: r.main_before == main_before, reverse=True)
    assert a.status == b.status == "merged"
    # One after the other: the second merge started from the first one's result.
    assert a.main_before == main_before and b.main_before == a.main_after
    assert _main(repo) == b.main_after
    assert (repo / "one.py").read_text() == "1\n" and (repo / "two.py").read_text() == "2\n"


def test_a_local_edit_in_the_room_checkout_blocks_the_merge_without_damage(repo, worktrees_dir):
    worktree = _session(repo, worktrees_dir, 1, {"app.py": "changed\n"})
    (repo / "app.py").write_text("someone's uncommitted edit\n")
    main_before = _main(repo)
    with pytest.raises(WorktreeError, match="could not be advanced"):
        worktree_merge(repo=repo, branch=worktree.branch)
    assert _main(repo) == main_before
    assert (repo / "app.py").read_text() == "someone's uncommitted edit\n"


def test_remove_deletes_the_worktree_and_keeps_the_branch_unless_asked(repo, worktrees_dir):
    worktree = _session(repo, worktrees_dir, 1, {"x.py": "x\n"})
    worktree_remove(worktree=worktree)
    assert not worktree.path.exists()
    assert str(worktree.path) not in git("worktree", "list", cwd=repo)
    assert git("rev-parse", "--verify", worktree.branch, cwd=repo).strip()
    worktree_remove(worktree=worktree, delete_branch=True)  # idempotent, and now the branch
    assert git("branch", "--list", worktree.branch, cwd=repo).strip() == ""


def test_merge_moves_main_by_reference_when_the_room_checkout_is_elsewhere(repo, worktrees_dir):
    worktree = _session(repo, worktrees_dir, 1, {"x.py": "x\n"})
    git("switch", "--quiet", "--detach", "main", cwd=repo)
    result = worktree_merge(repo=repo, branch=worktree.branch)
    assert result.status == "merged" and _main(repo) == result.main_after
    assert not (repo / "x.py").exists()  # the detached checkout was left alone


def test_caches_a_session_leaves_behind_are_never_committed(repo, worktrees_dir):
    tree = worktree_create(repo=repo, worktrees_dir=worktrees_dir, session_id=77)
    (tree.path / "__pycache__").mkdir()
    (tree.path / "__pycache__" / "mod.cpython-312.pyc").write_bytes(b"\0")
    (tree.path / ".pytest_cache").mkdir()
    (tree.path / ".pytest_cache" / "README.md").write_text("cache")
    (tree.path / "real.py").write_text("x = 1\n")
    worktree_commit(worktree=tree, message="work")
    files = git("show", "--name-only", "--format=", "HEAD", cwd=tree.path).split()
    assert files == ["real.py"]


def test_a_room_whose_main_branch_has_another_name_merges_into_it(tmp_path, worktrees_dir):
    repo = tmp_path / "repos" / "legacy"
    repo.mkdir(parents=True)
    git("init", "--quiet", "--initial-branch", "master", cwd=repo)
    (repo / "app.py").write_text("x = 1\n")
    _commit_all(repo, "Initial commit")
    tree = worktree_create(repo=repo, worktrees_dir=worktrees_dir, session_id=5, base="master")
    (tree.path / "app.py").write_text("x = 2\n")
    worktree_commit(worktree=tree, message="change")
    result = worktree_merge(repo=repo, branch=tree.branch, target="master")
    assert result.status == "merged"
    assert (repo / "app.py").read_text() == "x = 2\n"
    assert git("rev-parse", "master", cwd=repo).strip() == result.main_after


def test_changes_under_atrium_never_leave_the_worktree(repo, worktrees_dir):
    tree = worktree_create(repo=repo, worktrees_dir=worktrees_dir, session_id=78)
    (tree.path / ".atrium" / "tasks" / "1").mkdir(parents=True)
    (tree.path / ".atrium" / "tasks" / "1" / "intent.md").write_text("new goals, says the agent\n")
    assert worktree_commit(worktree=tree, message="only the intent") is None
    (tree.path / "real.py").write_text("x = 1\n")
    worktree_commit(worktree=tree, message="work")
    assert git("show", "--name-only", "--format=", "HEAD", cwd=tree.path).split() == ["real.py"]


def test_a_branch_that_changed_atrium_files_with_its_own_commits_is_not_merged(repo, worktrees_dir):
    intent = repo / ".atrium" / "tasks" / "1" / "intent.md"
    intent.parent.mkdir(parents=True)
    intent.write_text("the person's intent\n")
    _commit_all(repo, "intent")
    tree = worktree_create(repo=repo, worktrees_dir=worktrees_dir, session_id=79)
    (tree.path / ".atrium" / "tasks" / "1" / "intent.md").write_text("HACKED intent\n")
    git("add", ".atrium", cwd=tree.path)  # staged by a shell command...
    assert worktree_commit(worktree=tree, message="sneaky") is None  # ...and unstaged by the hub
    git("add", ".atrium", cwd=tree.path)
    _commit_all(tree.path, "committed with shell git")
    result = worktree_merge(repo=repo, branch=tree.branch)
    assert result.status == "conflict" and result.conflicts == (".atrium/tasks/1/intent.md",)
    assert intent.read_text() == "the person's intent\n"
