from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents.tools.paths import PathRefused, resolve_path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "secret.txt").write_text("do not read\n")
    return secret


def test_a_relative_path_inside_resolves_to_its_worktree_relative_form(worktree):
    resolved = resolve_path(worktree, "src/../src/./app.py")
    assert resolved.relative == "src/app.py"
    assert resolved.absolute == (worktree / "src" / "app.py").resolve()


def test_an_absolute_path_inside_the_worktree_is_accepted(worktree):
    assert resolve_path(worktree, str(worktree / "README.md")).relative == "README.md"


@pytest.mark.parametrize("spelled", ["../outside/secret.txt", "src/../../outside/secret.txt"])
def test_dot_dot_out_of_the_worktree_is_refused(worktree, outside, spelled):
    with pytest.raises(PathRefused, match="outside the worktree"):
        resolve_path(worktree, spelled)


def test_an_absolute_path_outside_is_refused(worktree, outside):
    with pytest.raises(PathRefused, match="outside the worktree"):
        resolve_path(worktree, str(outside / "secret.txt"))
    with pytest.raises(PathRefused):
        resolve_path(worktree, "/etc/passwd")


def test_a_symlinked_file_pointing_out_is_refused(worktree, outside):
    os.symlink(outside / "secret.txt", worktree / "innocent.txt")
    with pytest.raises(PathRefused, match="outside the worktree"):
        resolve_path(worktree, "innocent.txt")


def test_a_path_through_a_symlinked_directory_pointing_out_is_refused(worktree, outside):
    os.symlink(outside, worktree / "src" / "vendor")
    with pytest.raises(PathRefused):
        resolve_path(worktree, "src/vendor/secret.txt")
    # A new file through the link would land outside too.
    with pytest.raises(PathRefused):
        resolve_path(worktree, "src/vendor/new.txt", for_write=True)


def test_a_dangling_symlink_pointing_out_is_refused(worktree, tmp_path):
    os.symlink(tmp_path / "nowhere" / "file", worktree / "dangling")
    with pytest.raises(PathRefused):
        resolve_path(worktree, "dangling", for_write=True)


def test_a_symlink_that_stays_inside_is_followed(worktree):
    os.symlink(worktree / "src", worktree / "code")
    assert resolve_path(worktree, "code/app.py").relative == "src/app.py"


def test_the_worktree_itself_may_be_reached_through_a_symlink(tmp_path, worktree):
    alias = tmp_path / "alias"
    os.symlink(worktree, alias)
    assert resolve_path(alias, "src/app.py").relative == "src/app.py"


@pytest.mark.parametrize("target", [".git/config", ".git", "src/../.git/hooks/pre-commit"])
def test_writes_into_git_are_refused(worktree, target):
    with pytest.raises(PathRefused, match=r"\.git/"):
        resolve_path(worktree, target, for_write=True)


def test_writes_under_atrium_are_refused_but_reads_are_not(worktree):
    with pytest.raises(PathRefused, match="authoritative"):
        resolve_path(worktree, ".atrium/tasks/1/intent.md", for_write=True)
    assert resolve_path(worktree, ".atrium/tasks/1/intent.md").relative == ".atrium/tasks/1/intent.md"


def test_a_symlink_into_atrium_cannot_be_used_to_write_there(worktree):
    os.symlink(worktree / ".atrium", worktree / "notes")
    with pytest.raises(PathRefused, match="authoritative"):
        resolve_path(worktree, "notes/tasks/1/intent.md", for_write=True)


def test_the_root_is_not_a_file_to_write_and_nul_bytes_are_refused(worktree):
    with pytest.raises(PathRefused, match="root"):
        resolve_path(worktree, ".", for_write=True)
    with pytest.raises(PathRefused, match="NUL"):
        resolve_path(worktree, "a\0b")
