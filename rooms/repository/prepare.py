"""The hub-owned git repository of a room.

A repository is built in a hidden temporary folder next to its final place
(``prepare_repository``), with no database transaction open: a clone may take
minutes, and SQLite would hold its write lock for all of them. ``room_create`` then
renames the finished folder into place inside its transaction (``install``), or
removes it (``discard``) when anything fails, so a half-made repository never sits
at a room's path and no repository folder outlives a failed create.
"""

from __future__ import annotations

import codecs
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from rooms.errors import RoomError
from rooms.repository.git import GitError, git
from rooms.repository.imported import ImportRefused, refuse_hostile_content
from rooms.repository.ssh import SshAddress
from rooms.repository.upstream import Upstream, UpstreamError, clone

DEFAULT_BRANCH = "main"
CLONE_TIMEOUT_SECONDS = 600
BRANCH_MAX_LENGTH = 100  # Room.default_branch


@dataclass(frozen=True)
class NewRepository:
    """An empty repository on ``main`` with one initial commit."""


@dataclass(frozen=True)
class CloneRepository:
    """A copy (``git clone``) of an existing local repository, already checked."""

    path: Path


@dataclass(frozen=True)
class BundleRepository:
    """A clone of an uploaded git bundle (``git bundle create repo.bundle --all``), already checked."""

    path: Path


@dataclass(frozen=True)
class TemplateRepository:
    """A new repository whose first commit holds the files of a folder shipped with the code."""

    path: Path


@dataclass(frozen=True)
class UpstreamRepository:
    """The branch of a repository on a forge the room stays linked to (its upstream)."""

    upstream: Upstream
    after_work: str = "push_main"
    forge: str = ""
    api_url: str = ""


RepositorySource = NewRepository | CloneRepository | BundleRepository | TemplateRepository | UpstreamRepository


class PreparedRepository:
    """A finished repository waiting in a hidden folder for its room.

    ``install`` renames it to the room's path; ``discard`` removes it from wherever
    it is (the hidden folder, or the room's path when the room's transaction failed
    after the rename), so a caller's cleanup is one call whatever step failed.
    """

    def __init__(self, path: Path, default_branch: str) -> None:
        self.path = path
        self.default_branch = default_branch
        self.installed = False

    def install(self, target: Path) -> None:
        """Move the repository to ``target``, which must not exist; RoomError otherwise."""
        if self.installed:
            raise RuntimeError(f"The repository was already installed at {self.path}.")
        if target.exists():
            raise RoomError(f"A folder already exists at {target}.", code="repo")
        try:
            # rename(2) is atomic, and refuses a non-empty target: two creators cannot
            # both end up owning the same folder.
            os.rename(self.path, target)
        except OSError as exc:
            raise RoomError(f"The repository folder could not be created: {exc}", code="repo") from exc
        self.path, self.installed = target, True

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def prepare_repository(source: RepositorySource, *, parent: Path) -> PreparedRepository:
    """Build the repository in a new hidden folder under ``parent`` (the rooms' folder).

    ``parent`` must be the folder the repository will be installed in: the final
    rename only stays atomic within one file system. Raises RoomError (nothing left
    on disk) when the source is refused or git fails.
    """
    parent.mkdir(parents=True, exist_ok=True)
    # The leading dot keeps it out of the way of room slugs, which never start with one.
    workdir = Path(tempfile.mkdtemp(prefix=".room-", suffix=".partial", dir=parent))
    try:
        _build(workdir, source)
        branch = git("symbolic-ref", "--short", "--quiet", "HEAD", cwd=workdir, check=False).strip()
        if not branch:  # the original had a detached HEAD: give the room a real branch
            git("switch", "--quiet", "--create", DEFAULT_BRANCH, cwd=workdir)
            branch = DEFAULT_BRANCH
        _refuse_option_like(branch, workdir)
    except GitError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        raise RoomError(f"git could not create the repository: {exc.stderr or exc}", code="repo") from exc
    except OSError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        raise RoomError(f"The repository folder could not be created: {exc}", code="repo") from exc
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    return PreparedRepository(workdir, branch)


def _refuse_option_like(branch: str, repo: Path) -> None:
    """The room's branch is passed to git on later commands (worktrees, merges): a name
    that git would read as an option (``-x``, which a copied folder's HEAD may name) is
    refused here rather than misread there."""
    if (branch.startswith("-") or len(branch) > BRANCH_MAX_LENGTH
            or git("check-ref-format", "--branch", branch, cwd=repo, check=False).strip() != branch):
        raise RoomError(f"The repository's current branch {branch!r} cannot be a room's branch; "
                        "check out another branch in it first.", code="repo")


def check_clone_source(raw_path: str) -> CloneRepository:
    """Validate a local path a person wants copied into a room, with an error they can act on."""
    raw_path = (raw_path or "").strip()
    if not raw_path:
        raise RoomError("Give the path of the repository to copy.", code="repo")
    if "\x00" in raw_path:
        raise RoomError("The path contains a NUL character.", code="repo")
    path = Path(raw_path).expanduser()
    if not path.is_absolute():
        raise RoomError(f"{raw_path} is not an absolute path.", code="repo")
    # Before anything else touches the path: whether something exists outside the
    # operator's folders, or in the hub's, is none of the person's business.
    _refuse_outside_clone_roots(path, shown=path)
    _refuse_hub_data(path, shown=path)
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
    _refuse_hub_git_dirs(path)
    try:
        git("rev-parse", "--verify", "--quiet", "HEAD^{commit}", cwd=path, timeout=30)
    except GitError:
        raise RoomError(f"{path} has no commits yet; there is nothing to copy.", code="repo") from None
    return CloneRepository(path=path.resolve())


def clone_roots_text() -> str:
    return ", ".join(str(root) for root in settings.ATRIUM_CLONE_ROOTS)


def _refuse_outside_clone_roots(path: Path, *, shown: Path) -> None:
    """Local repositories are copied only from the folders the operator lists in
    ATRIUM_CLONE_ROOTS (symlinks resolved): none by default."""
    roots = settings.ATRIUM_CLONE_ROOTS
    if not roots:
        raise RoomError("Copying a local repository is turned off on this hub (an operator can list "
                        "folders in ATRIUM_CLONE_ROOTS); upload a git bundle instead.", code="repo")
    try:
        real = Path(os.path.realpath(path))
    except (OSError, RuntimeError):
        real = path
    if not any(real == root or real.is_relative_to(root) for root in roots):
        raise RoomError(f"{shown} is not inside the folders repositories may be copied from "
                        f"({clone_roots_text()}).", code="repo")


def _refuse_hub_data(path: Path, *, shown: Path) -> None:
    """Refuse a path whose real location (symlinks resolved) is in the hub's data folder.

    Rooms' repositories, worktrees, jobs and blobs live there; a copy of another
    room's repository would make its content readable outside that room.
    """
    data_dir = Path(settings.DATA_DIR).resolve()
    try:
        real = Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:  # judged by where it would lead; "does not exist" comes later
        real = Path(os.path.realpath(path))
    except (OSError, RuntimeError):  # a symlink loop, whatever the Python version says about it
        raise RoomError(f"{shown} cannot be resolved: it contains a symlink loop.", code="repo") from None
    if real.is_relative_to(data_dir):
        raise RoomError(
            f"{shown} is inside the hub's data folder; repositories there belong to rooms "
            "and cannot be copied.",
            code="repo",
        )


def _refuse_hub_git_dirs(path: Path) -> None:
    """A folder in an allowed place can still keep its git data elsewhere: a ``.git``
    file pointing at another repository (as worktrees have), or borrowed objects
    (``objects/info/alternates``, followed by git through up to five hops), which a
    local clone copies too. All of them must be in the operator's folders and outside
    the hub's data folder."""
    git_dirs = []
    for flag in ("--absolute-git-dir", "--git-common-dir"):
        found = git("rev-parse", flag, cwd=path, check=False, timeout=30).strip()
        if found:
            git_dirs.append(path / found)  # relative answers are relative to ``path``
    for place in [*git_dirs, *borrowed_object_dirs(path)]:
        _refuse_outside_clone_roots(place, shown=path)
        _refuse_hub_data(place, shown=path)


def borrowed_object_dirs(repo: Path) -> list[Path]:
    """Every object folder git reads for ``repo`` besides its own, as git itself finds
    them (relative lines, quoting, links and every hop resolved its way, not ours)."""
    counted = git("count-objects", "-v", cwd=repo, check=False, timeout=30)
    return [Path(_unquoted(line.removeprefix("alternate: ")))
            for line in counted.splitlines() if line.startswith("alternate: ")]


def _unquoted(path: str) -> str:
    """git's C-style quoting of an unusual path (quotes, backslash and octal escapes) undone."""
    if len(path) < 2 or not (path.startswith('"') and path.endswith('"')):
        return path
    raw = codecs.escape_decode(path[1:-1].encode("utf-8", "surrogateescape"))[0]
    return raw.decode("utf-8", "surrogateescape")


def _build(workdir: Path, source: RepositorySource) -> None:
    match source:
        case CloneRepository(path=path):
            # Checked again here: the source may have been built without the form,
            # or a symlink on the way may have changed since the form checked it.
            _refuse_outside_clone_roots(path, shown=path)
            _refuse_hub_data(path, shown=path)
            _refuse_hub_git_dirs(path)
            # --no-local: objects come through git's own transport, which reads what the
            # source borrows exactly as the check above did (a local copy reads the
            # alternates file its own way), and the room gets its own objects.
            git("clone", "--quiet", "--no-checkout", "--no-local", "--", str(path), str(workdir),
                cwd=workdir.parent, timeout=CLONE_TIMEOUT_SECONDS)
            _check_out_if_acceptable(workdir)
        case BundleRepository(path=path):
            git("clone", "--quiet", "--no-checkout", "--", str(path), str(workdir), cwd=workdir.parent,
                timeout=CLONE_TIMEOUT_SECONDS)
            if not git("rev-parse", "--verify", "--quiet", "HEAD^{commit}", cwd=workdir, check=False).strip():
                raise RoomError("The bundle has no checked-out branch (HEAD); make it with "
                                "`git bundle create repo.bundle --all`.", code="repo")
            _check_out_if_acceptable(workdir)
        case TemplateRepository(path=path):
            git("init", "--quiet", "--initial-branch", DEFAULT_BRANCH, cwd=workdir)
            shutil.copytree(path, workdir, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"))
            git("add", "--all", cwd=workdir)
            _initial_commit(workdir)
        case NewRepository() | UpstreamRepository(upstream=Upstream(ssh=SshAddress())):
            # An SSH upstream's deploy key is new: its forge knows it only once a person
            # has added it. The room starts empty and takes the upstream's files at its
            # first fetch.
            git("init", "--quiet", "--initial-branch", DEFAULT_BRANCH, cwd=workdir)
            _initial_commit(workdir, "--allow-empty")
        case UpstreamRepository(upstream=upstream):
            try:
                clone(upstream, workdir)
            except UpstreamError as exc:
                raise RoomError(f"The upstream could not be read: {exc}", code="repo") from None
            _check_out_if_acceptable(workdir)


def _check_out_if_acceptable(workdir: Path) -> None:
    """Check the imported objects (every branch), then check out HEAD's files."""
    try:
        refuse_hostile_content(workdir, max_checkout_bytes=settings.ATRIUM_CHECKOUT_MAX_BYTES,
                               max_checkout_files=settings.ATRIUM_CHECKOUT_MAX_FILES)
    except ImportRefused as exc:
        raise RoomError(str(exc), code="repo") from None
    git("reset", "--quiet", "--hard", "HEAD", cwd=workdir, timeout=CLONE_TIMEOUT_SECONDS)


def check_bundle(path: Path) -> BundleRepository:
    """An uploaded file that git reads as a bundle with at least one branch."""
    try:
        heads = git("bundle", "list-heads", str(path), cwd=path.parent, timeout=60)
    except GitError as exc:
        said = _first_line(exc.stderr).replace(f"'{path}'", "it").replace(str(path), "it")  # not the server's path
        raise RoomError(f"That file is not a git bundle ({said}); make one with "
                        "`git bundle create repo.bundle --all`.", code="repo") from None
    if not any(line.split()[-1:] and line.split()[-1].startswith("refs/heads/") for line in heads.splitlines()):
        raise RoomError("The bundle holds no branch; make it with `git bundle create repo.bundle --all`.",
                        code="repo")
    return BundleRepository(path=path)


def _initial_commit(workdir: Path, *extra: str) -> None:
    # A person's global git config may demand signing; the hub's own commits are unsigned.
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "--no-verify", *extra,
        "-m", "Initial commit", cwd=workdir)


def _first_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.strip()), "git refused it")
