"""A session's change read from git: every kind of file change, named and counted, the
hub's files left out, attributes that would hide a change ignored, a merged branch still
showing what it brought, and the patch applying where the branch left main."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rooms.repository.changes import SHOWN_MAX_BYTES, change_patch, file_diffs, session_change
from rooms.repository.git import git
from rooms.repository.worktrees import worktree_merge
from tests.rooms.factories import make_git_repo

# The room lock is the database's on PostgreSQL (rooms.repository.lock).
pytestmark = pytest.mark.django_db


def _commit(repo: Path, message: str) -> None:
    git("add", "--all", cwd=repo)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", message, cwd=repo)


def _branch_with_every_kind_of_change(tmp_path: Path) -> Path:
    old_text = "".join(f"line {n}\n" for n in range(40))
    repo = make_git_repo(tmp_path / "repo", files={
        "keep.py": "def f():\n    return 1\n", "gone.txt": "bye\n", "old_name.txt": old_text,
        ".atrium/tasks/1/intent.md": "the hub's\n"})
    git("checkout", "--quiet", "-b", "atrium/session-1", cwd=repo)
    (repo / "keep.py").write_text("def f():\n    return 2  # <script>\n")
    (repo / "gone.txt").unlink()
    (repo / "old_name.txt").rename(repo / "new_name.txt")
    (repo / "new.md").write_text("# New\n")
    (repo / "blob.bin").write_bytes(b"\x00\x01binary\x00" * 10)
    (repo / "huge.txt").write_text("x" * (SHOWN_MAX_BYTES + 10) + "\n")
    (repo / ".gitattributes").write_text("*.py -diff\n")  # the agent's: must not hide keep.py
    (repo / ".atrium" / "tasks" / "1" / "intent.md").write_text("rewritten by a shell\n")
    _commit(repo, "the session's work")
    git("checkout", "--quiet", "main", cwd=repo)
    return repo


def test_every_kind_of_change_is_named_and_counted(tmp_path):
    repo = _branch_with_every_kind_of_change(tmp_path)
    change = session_change(repo, "atrium/session-1", "main")
    by_path = {file.path: file for file in change.files}
    assert set(by_path) == {".gitattributes", "blob.bin", "gone.txt", "huge.txt", "keep.py", "new.md",
                            "new_name.txt"}
    assert by_path["keep.py"].status == "M" and (by_path["keep.py"].added, by_path["keep.py"].removed) == (1, 1)
    assert by_path["gone.txt"].status == "D" and by_path["new.md"].status == "A"
    assert by_path["new_name.txt"].status == "R" and by_path["new_name.txt"].old_path == "old_name.txt"
    assert by_path["huge.txt"].too_large and not by_path["keep.py"].too_large
    diffs = file_diffs(repo, change, list(change.files))
    assert "huge.txt" not in diffs
    assert "+    return 2  # <script>" in diffs["keep.py"]
    assert "\x00" in diffs["blob.bin"] or "\ufffd" in diffs["blob.bin"]
    assert diffs["new_name.txt"].startswith("diff --git a/old_name.txt b/new_name.txt")
    assert all(diffs[path].startswith(f"diff --git a/{by_path[path].old_path}") for path in diffs)


def test_the_patch_applies_where_the_branch_left_main(tmp_path):
    repo = _branch_with_every_kind_of_change(tmp_path)
    change = session_change(repo, "atrium/session-1", "main")
    patch = tmp_path / "change.patch"
    patch.write_bytes(change_patch(repo, change))
    target = tmp_path / "target"
    git("clone", "--quiet", str(repo), str(target), cwd=tmp_path)
    subprocess.run(["git", "apply", "--index", str(patch)], cwd=target, check=True)
    assert (target / "blob.bin").read_bytes() == b"\x00\x01binary\x00" * 10
    assert (target / "new_name.txt").exists() and not (target / "gone.txt").exists()
    assert (target / ".atrium" / "tasks" / "1" / "intent.md").read_text() == "the hub's\n"


def test_a_merged_session_still_shows_what_it_brought(tmp_path):
    repo = make_git_repo(tmp_path / "repo", files={"a.txt": "a\n"})
    git("branch", "atrium/session-2", cwd=repo)
    (repo / "main.txt").write_text("main moved on\n")
    _commit(repo, "main's own")
    git("checkout", "--quiet", "atrium/session-2", cwd=repo)
    (repo / "a.txt").write_text("a, changed\n")
    _commit(repo, "the session's")
    git("checkout", "--quiet", "main", cwd=repo)
    before = session_change(repo, "atrium/session-2", "main")
    assert [file.path for file in before.files] == ["a.txt"] and not before.merged_by
    merged = worktree_merge(repo=repo, branch="atrium/session-2")
    assert merged.status == "merged"
    after = session_change(repo, "atrium/session-2", "main")
    assert [file.path for file in after.files] == ["a.txt"] and after.merged_by == merged.main_after


def test_no_branch_no_change(tmp_path):
    repo = make_git_repo(tmp_path / "repo")
    assert session_change(repo, "atrium/session-9", "main") is None
    git("branch", "atrium/session-9", cwd=repo)
    assert session_change(repo, "atrium/session-9", "main").files == ()
