"""Opening paths beneath a folder whose content the hub does not trust.

A worktree and a room's checkout hold whatever an agent or an uploaded repository put
there: symlinks, nested folders, a link swapped in while the hub looks. Every path the
hub opens there, outside the sandbox, is walked here one component at a time on held
directory descriptors (``openat`` with ``O_NOFOLLOW``), so what is checked is what is
opened: a component swapped for a link between two steps makes the next open fail; it
never lands outside. Nothing else in the hub opens such a path by name.

Two ways to walk:
- ``links=False`` (the hub's own files: intent files, anything under ``.atrium/``): any
  symlink on the way is refused, as openat2's RESOLVE_NO_SYMLINKS would;
- ``links=True`` (the agent's file tools): a symlink is followed while it stays beneath
  the root, its target read and resolved on the held descriptors (RESOLVE_BENEATH); one
  that leads out is refused.

The walk is done in Python rather than with openat2(2), which Python does not expose and
container seccomp profiles often deny: one code path, the same on every kernel.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

MAX_LINKS = 40  # as the kernel's own limit on links in one lookup
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class PathRefused(ValueError):
    """The path leaves the root, goes through a link where none may be, or changed while
    it was opened; the message says which, for the person or the agent to act on."""


class MissingFolder(FileNotFoundError):
    """A folder on the way does not exist: ``filename`` is it, ``leads_to`` the whole
    path as it would be (physical up to the missing folder, as spelled after it)."""

    def __init__(self, missing: str, leads_to: str) -> None:
        super().__init__(errno.ENOENT, "no such folder", missing)
        self.leads_to = leads_to


@dataclass
class Located:
    """The folder holding a path's last entry, open, and that entry's name in it.

    ``name`` is "." for the root itself. The entry may not exist (a file to create).
    ``relative`` is the physical path below the root (links resolved), "." for the root.
    """

    dir_fd: int
    name: str
    relative: str
    made: list[str] = field(default_factory=list)  # folders this walk created, outermost first

    def lstat(self) -> os.stat_result | None:
        try:
            return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def open(self, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
        """A descriptor of the entry itself, never of what a link there points at."""
        try:
            return os.open(self.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, mode,
                           dir_fd=self.dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathRefused(f"{self.relative}: became a symbolic link while it was being "
                                  "opened; refused") from None
            raise


@contextmanager
def located(root: Path | str, path: str, *, links: bool, make_parents: bool = False,
            may_make: Callable[[str], None] | None = None, what: str = "the worktree") -> Iterator[Located]:
    """Walk ``path`` (relative to ``root``, or absolute inside it) down to its last entry.

    With ``make_parents``, missing folders on the way are made, each first shown (by its
    relative path) to ``may_make``, as is the last entry; it refuses one by raising
    PathRefused, and the folders made are then removed again.
    Raises PathRefused (outside the root, a link where none may be, a link loop),
    FileNotFoundError (a missing folder on the way, unless ``make_parents``) and
    NotADirectoryError (a file on the way).
    """
    if "\0" in path:
        raise PathRefused("path contains a NUL character")
    real_root = os.path.realpath(root)
    maker = (may_make or _anything) if make_parents else None
    walk = _Walk(real_root, os.open(real_root, _DIR_FLAGS), maker, what)
    try:
        where = walk.down(path, links=links)
    except BaseException:
        walk.close()
        remove_made_folders(real_root, walk.made)  # a refusal leaves nothing behind
        raise
    try:
        yield where
    except BaseException:
        walk.close()
        remove_made_folders(real_root, walk.made)  # whatever failed after, nothing is left behind
        raise
    finally:
        walk.close()


def _anything(_relative: str) -> None:
    return None


class _Walk:
    """The open folders from the root down to where the walk is."""

    def __init__(self, real_root: str, root_fd: int, may_make: Callable[[str], None] | None,
                 what: str) -> None:
        self.real_root = real_root
        self.outside = f"refused, it resolves outside {what} ({real_root}); use paths relative to its root"
        self.may_make = may_make
        self.stack: list[tuple[int, str]] = [(root_fd, "")]
        self.made: list[str] = []

    def close(self) -> None:
        for fd, _name in self.stack:
            os.close(fd)
        self.stack = []  # closing again closes nothing

    def relative(self, *more: str) -> str:
        return "/".join([name for _fd, name in self.stack[1:]] + list(more)) or "."

    def down(self, spelled: str, *, links: bool) -> Located:
        pending = self._parts_of(spelled.strip() or ".", spelled)
        hops = 0
        while pending:
            part = pending.pop(0)
            if part == "..":
                if len(self.stack) == 1:
                    raise PathRefused(f"{spelled}: {self.outside}")
                os.close(self.stack.pop()[0])
                continue
            info = self._lstat(part)
            if info is not None and stat.S_ISLNK(info.st_mode):
                if not links:
                    raise PathRefused(f"{spelled}: {self.relative(part)} is a symbolic link; "
                                      "the hub does not follow links here")
                hops += 1
                if hops > MAX_LINKS:
                    raise PathRefused(f"{spelled}: too many symbolic links (a loop?)")
                target = os.readlink(part, dir_fd=self.stack[-1][0])
                if os.path.isabs(target):
                    while len(self.stack) > 1:
                        os.close(self.stack.pop()[0])
                pending = self._parts_of(target, spelled) + pending
                continue
            if not pending:
                if self.may_make is not None:
                    self.may_make(self.relative(part))
                return Located(dir_fd=self.stack[-1][0], name=part, relative=self.relative(part),
                               made=self.made)
            self._enter(part, info, spelled, pending)
        return Located(dir_fd=self.stack[-1][0], name=".", relative=self.relative(), made=self.made)

    def _parts_of(self, spelled: str, shown: str) -> list[str]:
        if os.path.isabs(spelled):
            inner = os.path.normpath(spelled)
            if inner != self.real_root and not inner.startswith(self.real_root.rstrip("/") + "/"):
                raise PathRefused(f"{shown}: {self.outside}")
            spelled = inner[len(self.real_root):]
        return [part for part in spelled.split("/") if part not in ("", ".")]

    def _lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=self.stack[-1][0], follow_symlinks=False)
        except FileNotFoundError:
            return None

    def _enter(self, part: str, info: os.stat_result | None, spelled: str, rest: list[str]) -> None:
        here = self.stack[-1][0]
        if info is None:
            if self.may_make is None:
                leads_to = posixpath.normpath(self.relative(part, *rest))
                if leads_to.startswith("../") or leads_to == "..":
                    raise PathRefused(f"{spelled}: {self.outside}")
                raise MissingFolder(self.relative(part), leads_to)
            self.may_make(self.relative(part))
            with suppress(FileExistsError):  # made meanwhile: opened and judged below
                os.mkdir(part, 0o755, dir_fd=here)
                self.made.append(self.relative(part))
        elif not stat.S_ISDIR(info.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, "not a folder", self.relative(part))
        try:
            fd = os.open(part, _DIR_FLAGS | os.O_NONBLOCK, dir_fd=here)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # swapped since it was looked at
                raise PathRefused(f"{spelled}: {self.relative(part)} changed while it was being "
                                  "opened (a link or file put in its place); refused") from None
            raise
        self.stack.append((fd, part))


def read_bytes(root: Path | str, path: str, *, links: bool, limit: int | None = None) -> bytes | None:
    """A regular file's bytes (at most ``limit`` + 1 of them), or None when there is none."""
    try:
        with located(root, path, links=links) as where:
            return regular_bytes(where, limit)
    except FileNotFoundError:
        return None


def regular_bytes(where: Located, limit: int | None = None) -> bytes | None:
    """The bytes of the regular file at ``where`` (at most ``limit`` + 1), None when there
    is nothing; PathRefused for anything but a regular file."""
    try:
        fd = where.open(os.O_RDONLY)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PathRefused(f"{where.relative}: not a regular file")
    with os.fdopen(fd, "rb") as handle:
        return handle.read() if limit is None else handle.read(limit + 1)


def write_atomically(where: Located, data: bytes, *, mode: int | None = None) -> None:
    """Replace the entry with a regular file holding ``data``: readers see the old or
    the new file, never half of it, and a link at its place is replaced, not followed.
    ``mode`` keeps only the permission bits: the hub never writes a set-uid, set-gid or
    sticky file for the room."""
    if mode is not None:
        mode &= 0o777
    tmp = f".{where.name}.atrium-tmp-{os.getpid()}-{id(data):x}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o644 if mode is None else mode, dir_fd=where.dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
        os.replace(tmp, where.name, src_dir_fd=where.dir_fd, dst_dir_fd=where.dir_fd)
    finally:
        with suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=where.dir_fd)


def remove(where: Located) -> None:
    """Unlink the entry itself (a link is removed, never what it points at)."""
    with suppress(FileNotFoundError):
        os.unlink(where.name, dir_fd=where.dir_fd)


def remove_made_folders(root: Path | str, made: list[str]) -> None:
    """Remove the folders a walk made, deepest first, while they are empty."""
    for relative in reversed(made):
        try:
            with located(root, relative, links=False) as where:
                os.rmdir(where.name, dir_fd=where.dir_fd)
        except (OSError, PathRefused):
            return


@contextmanager
def opened_dir(where: Located) -> Iterator[int]:
    """A descriptor of the folder the entry is (the root itself when ``name`` is ".")."""
    try:
        fd = os.open(where.name, _DIR_FLAGS | os.O_NONBLOCK, dir_fd=where.dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise PathRefused(f"{where.relative}: became a symbolic link while it was being opened; "
                              "refused") from None
        raise
    try:
        yield fd
    finally:
        os.close(fd)


MAX_DEPTH = 200  # deeper folders are not walked (and cannot exhaust the recursion)


def walk(where: Located) -> Iterator[tuple[str, list[str], list[str], int]]:
    """Top-down, like ``os.fwalk``, over the folder ``where`` names: each folder's path
    relative to the root, its subfolders (prune in place), its other entries (links
    among them, whatever they point at), and its descriptor. Every folder is opened with ``O_NOFOLLOW``,
    ``O_DIRECTORY`` and ``O_NONBLOCK`` on its parent's descriptor: a link is never walked
    into, and an entry swapped for a FIFO or a link mid-walk is skipped, never opened
    (``os.fwalk`` opens a folder by name with neither flag: a FIFO there blocks forever)."""
    with opened_dir(where) as top:
        yield from _walk_fd(top, "" if where.relative == "." else where.relative, 0)


def walk_tree(root: Path | str) -> Iterator[tuple[str, list[str], list[str], int]]:
    """`walk` from the folder ``root`` itself (a path the hub chose, not one inside it)."""
    top = os.open(root, _DIR_FLAGS | os.O_NONBLOCK)
    try:
        yield from _walk_fd(top, "", 0)
    finally:
        os.close(top)


def _walk_fd(fd: int, relative: str, depth: int) -> Iterator[tuple[str, list[str], list[str], int]]:
    dirnames: list[str] = []
    filenames: list[str] = []
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                # Never followed: a link is an entry like a file (the hub is root; following
                # one would tell the room what lies where it may not look).
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            (dirnames if is_dir else filenames).append(entry.name)
    yield relative or ".", dirnames, filenames, fd
    if depth >= MAX_DEPTH:
        return
    for name in dirnames:
        try:
            inner = os.open(name, _DIR_FLAGS | os.O_NONBLOCK, dir_fd=fd)
        except OSError:
            continue  # a link, or changed or gone since it was listed
        try:
            yield from _walk_fd(inner, f"{relative}/{name}" if relative else name, depth + 1)
        finally:
            os.close(inner)
