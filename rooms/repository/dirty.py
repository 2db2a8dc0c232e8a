"""What a session's worktree holds that its HEAD does not, read from git itself after a
command ran: each path git's status names (tracked files changed or removed, new files
git does not ignore), whether HEAD has it, and the sha256 of what is there now.

git is started as everywhere else (hardened), given the worktree's own folder in the
room repository by path, never one the worktree's ``.git`` names; it takes no lock of
the worktree's (the agent's next command may run git itself). What is there is read
without following any link: the worktree is the agent's. Nothing here imports Django.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from agents.tools.beneath import PathRefused, located, opened_dir
from rooms.repository.git import GitError, git, git_bytes, git_records
from rooms.repository.hub_files import HUB_OWNED

_CHUNK = 1 << 20
RENAME_MAX_BYTES = 16 << 20
READING_INDEX = "atrium-reading-index"


@dataclass(frozen=True, slots=True)
class DirtyFiles:
    head: str  # the worktree's HEAD commit ("" before its first)
    files: dict[str, tuple[bool, str]]  # path -> (HEAD has it, sha256 of what is there now; "" for nothing)


def dirty_files(worktree: Path, admin_dir: Path, *, paths: set[str] | None = None, timeout: float = 60) -> DirtyFiles:
    """The worktree's paths that differ from its HEAD, none under ``.atrium/``.

    Read against an index of the hub's own (HEAD's tree, in the worktree's folder of
    the room repository, which the agent cannot reach), not the worktree's: git keeps
    its stat and untracked caches there between readings, and the agent's own index
    (what it staged, a merge's stages) changes nothing. ``paths``: only these (and
    what is under them), as named; None: the whole worktree."""
    index = admin_dir / READING_INDEX
    head_file = admin_dir / f"{READING_INDEX}.head"
    head, files = _status(worktree, admin_dir, index, paths, timeout)
    if not head_file.exists() or head_file.read_text() != head:  # HEAD moved: its tree afresh
        git("--git-dir", str(admin_dir), "read-tree", *([head] if head else ["--empty"]), cwd=worktree,
            index_file=index)
        head_file.write_text(head)
        head, files = _status(worktree, admin_dir, index, paths, timeout)
    return DirtyFiles(head=head, files=files)


def _status(worktree: Path, admin_dir: Path, index: Path, paths: set[str] | None,
            timeout: float) -> tuple[str, dict[str, tuple[bool, str]]]:
    head, files = "", {}
    spec = (".",) if paths is None else tuple(f":(literal){path}" for path in sorted(paths))
    # A reading of the whole worktree writes git's refreshed stat and untracked caches
    # to the index; one of a few paths leaves the index alone (writing 5,000 entries
    # back would cost it two thirds of its time).
    locks = ("--no-optional-locks",) if paths is not None else ()
    out = git(*locks, f"--git-dir={admin_dir}", f"--work-tree={worktree}", "status", "--porcelain=v2", "-z", "--branch",
              "--untracked-files=all", "--no-renames", "--ignore-submodules=all", "--", *spec,
              f":(exclude){HUB_OWNED}", cwd=worktree, timeout=timeout, index_file=index,
              config=(("core.untrackedCache", "true"),))
    for record in out.split("\0"):
        kind, _, rest = record.partition(" ")
        if kind == "#":
            if rest.startswith("branch.oid ") and not rest.endswith("(initial)"):
                head = rest.removeprefix("branch.oid ")
        elif kind == "?":
            files[rest] = (False, content_sha256(worktree, rest))
        elif kind == "1":
            fields = rest.split(" ", 7)
            files[fields[-1]] = (fields[2] != "000000", content_sha256(worktree, fields[-1]))  # mH: HEAD's mode
    return head, files


def content_sha256(worktree: Path, path: str) -> str:
    """sha256 of the file at ``path`` (of a link's target text, for a link; git keeps
    links so), or "" when nothing git keeps is there (no entry, a folder, a FIFO, or a
    path through a link)."""
    folder, _, name = path.rpartition("/")
    try:
        with located(worktree, folder or ".", links=False) as where, opened_dir(where) as dir_fd:
            found = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISLNK(found.st_mode):
                return hashlib.sha256(os.fsencode(os.readlink(name, dir_fd=dir_fd))).hexdigest()
            if not stat.S_ISREG(found.st_mode):
                return ""
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except (PathRefused, OSError):  # gone, a folder now, a link put in its place: nothing git keeps
        return ""
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # swapped since the lstat
            return ""
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def head_moves(worktree: Path, admin_dir: Path, old: str, new: str, *, timeout: float = 60) -> list[tuple[str, bool]]:
    """The paths git names between two commits of the worktree (the agent committed,
    checked out or reset), each with whether ``old`` had it; none under ``.atrium/``."""
    records = list(git_records("--no-optional-locks", f"--git-dir={admin_dir}", f"--work-tree={worktree}",
                               "diff-tree", "-r", "--no-renames", "--name-status", "-z", old, new, "--", ".",
                               f":(exclude){HUB_OWNED}", cwd=worktree, timeout=timeout))
    return [(path, status != "A") for status, path in zip(records[::2], records[1::2], strict=False)]


def content_at(worktree: Path, admin_dir: Path, commit: str, path: str) -> str:
    """sha256 of what ``commit`` holds at ``path`` ("" for nothing, or past
    ``RENAME_MAX_BYTES``: a rename is not looked for there)."""
    where, spec = f"--git-dir={admin_dir}", f"{commit}:{path}"
    try:
        if int(git("--no-optional-locks", where, "cat-file", "-s", spec, cwd=worktree)) > RENAME_MAX_BYTES:
            return ""
        data = git_bytes("--no-optional-locks", where, "cat-file", "blob", spec, cwd=worktree, timeout=60)
    except (GitError, ValueError):
        return ""
    return hashlib.sha256(data).hexdigest()
