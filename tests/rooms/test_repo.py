from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from hub.git import git
from rooms.errors import RoomError
from rooms.repo import (
    CloneRepository,
    NewRepository,
    TemplateRepository,
    check_clone_source,
    create_repository,
)
from tests.rooms.factories import make_git_repo


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir()) if parent.exists() else []


def test_a_new_repository_is_on_main_with_one_initial_commit(tmp_path):
    branch = create_repository(tmp_path / "repos" / "alpha", NewRepository())
    repo = tmp_path / "repos" / "alpha"
    assert branch == "main"
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=repo).strip() == "main"
    assert git("rev-list", "--count", "HEAD", cwd=repo).strip() == "1"
    assert git("status", "--porcelain", cwd=repo) == ""
    assert leftovers(tmp_path / "repos") == ["alpha"]  # no temporary folder stays behind


def test_a_clone_copies_history_and_keeps_the_original_branch(tmp_path):
    source = make_git_repo(tmp_path / "src", branch="trunk", files={"app.py": "print(1)\n"})
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "--allow-empty", "-m", "second", cwd=source)
    target = tmp_path / "repos" / "copy"
    branch = create_repository(target, check_clone_source(str(source)))
    assert branch == "trunk"
    assert (target / "app.py").read_text() == "print(1)\n"
    assert git("rev-parse", "HEAD", cwd=target) == git("rev-parse", "HEAD", cwd=source)
    # A real copy: the clone does not borrow the original's object store.
    assert not (target / ".git" / "objects" / "info" / "alternates").exists()
    shutil.rmtree(source)
    assert git("log", "--oneline", cwd=target).count("\n") == 2


def test_a_clone_of_a_detached_head_gets_a_main_branch(tmp_path):
    source = make_git_repo(tmp_path / "src")
    git("checkout", "--quiet", "--detach", cwd=source)
    branch = create_repository(tmp_path / "repos" / "copy", check_clone_source(str(source)))
    assert branch == "main"


def test_a_template_repository_commits_the_template_files(tmp_path):
    template = tmp_path / "template"
    (template / "pkg").mkdir(parents=True)
    (template / "pkg" / "mod.py").write_text("x = 1\n")
    (template / "__pycache__").mkdir()
    (template / "__pycache__" / "junk.pyc").write_bytes(b"\0")
    target = tmp_path / "repos" / "t"
    create_repository(target, TemplateRepository(template))
    assert git("ls-files", cwd=target).split() == ["pkg/mod.py"]


def test_an_existing_target_folder_is_refused_and_left_alone(tmp_path):
    target = tmp_path / "repos" / "taken"
    target.mkdir(parents=True)
    (target / "keep.txt").write_text("mine")
    with pytest.raises(RoomError, match="already exists"):
        create_repository(target, NewRepository())
    assert (target / "keep.txt").read_text() == "mine"
    assert leftovers(tmp_path / "repos") == ["taken"]


def test_a_git_failure_leaves_nothing_on_disk(tmp_path):
    source = make_git_repo(tmp_path / "src", files={"a.txt": "a\n"})
    checked = check_clone_source(str(source))
    # Break the object store after the check: the clone itself must fail.
    shutil.rmtree(source / ".git" / "objects")
    (source / ".git" / "objects").mkdir()
    with pytest.raises(RoomError) as failure:
        create_repository(tmp_path / "repos" / "broken", checked)
    assert failure.value.code == "repo"
    assert leftovers(tmp_path / "repos") == []


@pytest.mark.parametrize(
    ("make_path", "message"),
    [
        (lambda tmp: "", "Give the path"),
        (lambda tmp: "relative/path", "not an absolute path"),
        (lambda tmp: str(tmp / "missing"), "does not exist"),
        (lambda tmp: str(_file(tmp / "file.txt")), "is not a folder"),
        (lambda tmp: str(_dir(tmp / "plain")), "is not a git repository"),
        (lambda tmp: str(_dir(make_git_repo(tmp / "outer") / "sub")), "give the repository's top folder"),
        (lambda tmp: str(_empty_repo(tmp / "empty")), "has no commits"),
    ],
    ids=["blank", "relative", "missing", "file", "not-git", "subfolder", "no-commits"],
)
def test_clone_sources_are_checked_with_a_clear_error(tmp_path, make_path, message):
    with pytest.raises(RoomError, match=message) as refused:
        check_clone_source(make_path(tmp_path))
    assert refused.value.code == "repo"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every folder")
def test_an_unreadable_clone_source_is_refused(tmp_path):
    source = make_git_repo(tmp_path / "src")
    source.chmod(0)
    try:
        with pytest.raises(RoomError, match="not readable"):
            check_clone_source(str(source))
    finally:
        source.chmod(0o755)


def test_a_bare_repository_is_a_valid_clone_source(tmp_path):
    work = make_git_repo(tmp_path / "work")
    git("clone", "--quiet", "--bare", str(work), str(tmp_path / "bare.git"), cwd=tmp_path)
    assert check_clone_source(str(tmp_path / "bare.git")) == CloneRepository(path=(tmp_path / "bare.git").resolve())


def _file(path: Path) -> Path:
    path.write_text("x")
    return path


def _dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _empty_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git("init", "--quiet", cwd=path)
    return path
