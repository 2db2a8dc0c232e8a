"""The hub-owned git repository of a room.

A repository is built in a hidden temporary folder next to its final place and
renamed into place only when git has finished, so a half-made repository never sits
at a room's path. ``room_create`` pairs this with the database transaction.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hub.git import GitError, git
from rooms.errors import RoomError

DEFAULT_BRANCH = "main"
CLONE_TIMEOUT_SECONDS = 600


@dataclass(frozen=True)
class NewRepository:
    """An empty repository on ``main`` with one initial commit."""


@dataclass(frozen=True)
class CloneRepository:
    """A copy (``git clone``) of an existing local repository, already checked."""

    path: Path


@dataclass(frozen=True)
class TemplateRepository:
    """A new repository whose first commit holds the files of a folder shipped with the code."""

    path: Path


RepositorySource = NewRepository | CloneRepository | TemplateRepository


def check_clone_source(raw_path: str) -> CloneRepository:
    """Validate a local path a person wants copied into a room, with an error they can act on."""
    raw_path = (raw_path or "").strip()
    if not raw_path:
        raise RoomError("Give the path of the repository to copy.", code="repo")
    path = Path(raw_path).expanduser()
    if not path.is_absolute():
        raise RoomError(f"{raw_path} is not an absolute path.", code="repo")
    if not path.exists():
        raise RoomError(f"{path} does not exist.", code="repo")
    if not path.is_dir():
        raise RoomError(f"{path} is not a folder.", code="repo")
    if not os.access(path, os.R_OK | os.X_OK):
        raise RoomError(f"{path} is not readable by the hub.", code="repo")
    try:
        inside = git("rev-parse", "--is-inside-work-tree", "--is-bare-repository", cwd=path, timeout=30)
    except GitError as exc:
        raise RoomError(f"{path} is not a git repository ({_first_line(exc.stderr)}).", code="repo") from None
    except OSError as exc:
        raise RoomError(f"{path} cannot be read: {exc.strerror}.", code="repo") from None
    if "true" not in inside.split():
        raise RoomError(f"{path} is not a git repository.", code="repo")
    toplevel = git("rev-parse", "--show-toplevel", cwd=path, check=False, timeout=30).strip()
    if toplevel and Path(toplevel).resolve() != path.resolve():
        raise RoomError(
            f"{path} is inside the repository {toplevel}; give the repository's top folder.",
            code="repo",
        )
    try:
        git("rev-parse", "--verify", "--quiet", "HEAD^{commit}", cwd=path, timeout=30)
    except GitError:
        raise RoomError(f"{path} has no commits yet; there is nothing to copy.", code="repo") from None
    return CloneRepository(path=path.resolve())


def create_repository(target: Path, source: RepositorySource) -> str:
    """Create the repository at ``target`` (which must not exist); return its default branch.

    Raises RoomError (nothing left on disk) when git fails or ``target`` is taken.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        raise RoomError(f"A folder already exists at {target}.", code="repo")
    workdir = Path(tempfile.mkdtemp(prefix=f".{target.name}-", suffix=".partial", dir=target.parent))
    try:
        _build(workdir, source)
        branch = git("symbolic-ref", "--short", "--quiet", "HEAD", cwd=workdir, check=False).strip()
        if not branch:  # the original had a detached HEAD: give the room a real branch
            git("switch", "--quiet", "--create", DEFAULT_BRANCH, cwd=workdir)
            branch = DEFAULT_BRANCH
        # rename(2) is atomic, and refuses a non-empty target: two creators cannot
        # both end up owning the same folder.
        os.rename(workdir, target)
    except GitError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        raise RoomError(f"git could not create the repository: {exc.stderr or exc}", code="repo") from exc
    except OSError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        raise RoomError(f"The repository folder could not be created: {exc}", code="repo") from exc
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    return branch


def remove_repository(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _build(workdir: Path, source: RepositorySource) -> None:
    match source:
        case CloneRepository(path=path):
            # --no-hardlinks: the room gets its own objects, independent of the original.
            git("clone", "--quiet", "--no-hardlinks", "--", str(path), str(workdir),
                cwd=workdir.parent, timeout=CLONE_TIMEOUT_SECONDS)
        case TemplateRepository(path=path):
            git("init", "--quiet", "--initial-branch", DEFAULT_BRANCH, cwd=workdir)
            shutil.copytree(path, workdir, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"))
            git("add", "--all", cwd=workdir)
            _initial_commit(workdir)
        case NewRepository():
            git("init", "--quiet", "--initial-branch", DEFAULT_BRANCH, cwd=workdir)
            _initial_commit(workdir, "--allow-empty")


def _initial_commit(workdir: Path, *extra: str) -> None:
    # A person's global git config may demand signing; the hub's own commits are unsigned.
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "--no-verify", *extra,
        "-m", "Initial commit", cwd=workdir)


def _first_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.strip()), "git refused it")
