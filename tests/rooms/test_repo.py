from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from rooms.errors import RoomError
from rooms.repository.git import GitError, git
from rooms.repository.prepare import (
    CloneRepository,
    NewRepository,
    RepositorySource,
    TemplateRepository,
    check_clone_source,
    prepare_repository,
)
from tests.rooms.factories import make_git_repo


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir()) if parent.exists() else []


def prepare_and_install(target: Path, source: RepositorySource) -> str:
    """What room_create does, minus the database: prepare next to ``target``, install there."""
    prepared = prepare_repository(source, parent=target.parent)
    try:
        prepared.install(target)
    except BaseException:
        prepared.discard()
        raise
    return prepared.default_branch


def test_a_new_repository_is_on_main_with_one_initial_commit(tmp_path):
    branch = prepare_and_install(tmp_path / "repos" / "alpha", NewRepository())
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
    branch = prepare_and_install(target, check_clone_source(str(source)))
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
    branch = prepare_and_install(tmp_path / "repos" / "copy", check_clone_source(str(source)))
    assert branch == "main"


def test_a_template_repository_commits_the_template_files(tmp_path):
    template = tmp_path / "template"
    (template / "pkg").mkdir(parents=True)
    (template / "pkg" / "mod.py").write_text("x = 1\n")
    (template / "__pycache__").mkdir()
    (template / "__pycache__" / "junk.pyc").write_bytes(b"\0")
    target = tmp_path / "repos" / "t"
    prepare_and_install(target, TemplateRepository(template))
    assert git("ls-files", cwd=target).split() == ["pkg/mod.py"]


def test_a_prepared_repository_waits_in_a_hidden_folder_until_it_is_installed(tmp_path):
    parent = tmp_path / "repos"
    prepared = prepare_repository(NewRepository(), parent=parent)
    [hidden] = leftovers(parent)
    assert hidden.startswith(".") and hidden.endswith(".partial")
    assert prepared.path == parent / hidden and prepared.default_branch == "main"
    prepared.install(parent / "alpha")
    assert leftovers(parent) == ["alpha"]
    assert prepared.path == parent / "alpha" and prepared.installed
    assert git("rev-list", "--count", "HEAD", cwd=parent / "alpha").strip() == "1"


def test_discard_removes_the_repository_before_or_after_it_is_installed(tmp_path):
    parent = tmp_path / "repos"
    waiting = prepare_repository(NewRepository(), parent=parent)
    installed = prepare_repository(NewRepository(), parent=parent)
    installed.install(parent / "beta")
    waiting.discard()
    installed.discard()
    assert leftovers(parent) == []


def test_an_existing_target_folder_is_refused_and_left_alone(tmp_path):
    target = tmp_path / "repos" / "taken"
    target.mkdir(parents=True)
    (target / "keep.txt").write_text("mine")
    prepared = prepare_repository(NewRepository(), parent=target.parent)
    with pytest.raises(RoomError, match="already exists") as refused:
        prepared.install(target)
    assert refused.value.code == "repo"
    assert not prepared.installed
    prepared.discard()
    assert (target / "keep.txt").read_text() == "mine"
    assert leftovers(tmp_path / "repos") == ["taken"]


@pytest.mark.parametrize("name", ["-x", "--upload-pack=touch", "b" * 101])
def test_a_clone_whose_branch_git_would_read_as_an_option_is_refused(tmp_path, name):
    """The room's branch is an argument of later git commands (``worktree add … <branch>``)."""
    source = make_git_repo(tmp_path / "src")
    git("update-ref", f"refs/heads/{name}", "HEAD", cwd=source)
    git("symbolic-ref", "HEAD", f"refs/heads/{name}", cwd=source)
    with pytest.raises(RoomError, match="cannot be a room's branch; check out another branch"):
        prepare_repository(check_clone_source(str(source)), parent=tmp_path / "repos")
    assert leftovers(tmp_path / "repos") == []


def test_a_git_command_past_its_time_is_a_git_error_and_leaves_no_process(tmp_path, monkeypatch):
    """A clone of a huge repository runs helpers of its own (``index-pack``): a timeout
    stops all of them, not git alone."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    helper_pid = tmp_path / "helper.pid"
    (bin_dir / "git").write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {helper_pid}\nwait\n")
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    with pytest.raises(GitError, match="git clone took longer than 1 seconds"):
        git("clone", "somewhere", cwd=tmp_path, timeout=1)
    assert not _alive(int(helper_pid.read_text()))


def _alive(pid: int) -> bool:
    """Running or sleeping; a killed process whose parent died may linger as a zombie."""
    for _ in range(50):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.1)
    return True


def test_a_git_failure_leaves_nothing_on_disk(tmp_path):
    source = make_git_repo(tmp_path / "src", files={"a.txt": "a\n"})
    checked = check_clone_source(str(source))
    # Break the object store after the check: the clone itself must fail.
    shutil.rmtree(source / ".git" / "objects")
    (source / ".git" / "objects").mkdir()
    with pytest.raises(RoomError) as failure:
        prepare_repository(checked, parent=tmp_path / "repos")
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


# --- the hub's data folder is never a clone source ---------------------------------------


@pytest.fixture
def in_data_dir() -> Iterator[Path]:
    """A fresh folder inside the hub's data folder (settings.DATA_DIR)."""
    folder = Path(settings.DATA_DIR) / f"clone-source-test-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize(
    "make_path",
    [
        lambda inside, tmp: str(make_git_repo(inside / "repos" / "other-room")),
        lambda inside, tmp: str(make_git_repo(inside / "worktrees" / "session-1")),
        lambda inside, tmp: str(settings.DATA_DIR),
        lambda inside, tmp: str(inside / "no-such-room"),
        lambda inside, tmp: f"{make_git_repo(inside / 'repos' / 'r')}/../../{inside.name}/repos/r",
        lambda inside, tmp: str(_symlink(tmp / "innocent-looking", make_git_repo(inside / "repos" / "s"))),
    ],
    ids=["another-room", "a-worktree", "the-data-folder", "missing-inside", "dot-dot", "symlink-into"],
)
def test_clone_sources_in_the_hubs_data_folder_are_refused(in_data_dir, tmp_path, make_path):
    with pytest.raises(RoomError, match="inside the hub's data folder") as refused:
        check_clone_source(make_path(in_data_dir, tmp_path))
    assert refused.value.code == "repo"


def test_a_worktree_outside_the_data_folder_of_a_repository_inside_it_is_refused(in_data_dir, tmp_path):
    room_repo = make_git_repo(in_data_dir / "repos" / "victim", files={"secret.txt": "s3cret\n"})
    git("worktree", "add", "--quiet", "-b", "side", str(tmp_path / "outside"), cwd=room_repo)
    assert (tmp_path / "outside" / "secret.txt").exists()  # a real checkout, outside the data folder
    with pytest.raises(RoomError, match="inside the hub's data folder"):
        check_clone_source(str(tmp_path / "outside"))


def test_a_repository_borrowing_objects_from_the_data_folder_is_refused(in_data_dir, tmp_path):
    room_repo = make_git_repo(in_data_dir / "repos" / "victim")
    borrower = make_git_repo(tmp_path / "borrower")
    (borrower / ".git" / "objects" / "info").mkdir(parents=True, exist_ok=True)
    (borrower / ".git" / "objects" / "info" / "alternates").write_text(f"{room_repo / '.git' / 'objects'}\n")
    with pytest.raises(RoomError, match="inside the hub's data folder"):
        check_clone_source(str(borrower))


def test_preparing_a_clone_from_the_data_folder_is_refused_even_without_the_check(in_data_dir, tmp_path):
    room_repo = make_git_repo(in_data_dir / "repos" / "victim")
    with pytest.raises(RoomError, match="inside the hub's data folder") as refused:
        prepare_repository(CloneRepository(path=room_repo), parent=tmp_path / "repos")
    assert refused.value.code == "repo"
    assert leftovers(tmp_path / "repos") == []


def test_a_symlink_loop_is_refused_clearly(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(RoomError, match="symlink loop") as refused:
        check_clone_source(str(tmp_path / "a" / "repo"))
    assert refused.value.code == "repo"


def test_a_path_with_a_nul_character_is_refused_clearly(tmp_path):
    with pytest.raises(RoomError, match="NUL character"):
        check_clone_source(f"{tmp_path}/a\x00b")


def _symlink(link: Path, target: Path) -> Path:
    link.symlink_to(target)
    return link
