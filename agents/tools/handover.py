"""Making a sandbox's place ready for a command: its folders exist, and where commands run
as the room's own user, the worktree and temp folder belong to that user, handed over
without following a link or opening a FIFO a running command may have swapped in."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from agents.tools.beneath import walk_tree

if TYPE_CHECKING:
    from agents.tools.sandbox import Place, SandboxPolicy


def prepare(policy: SandboxPolicy, place: Place) -> None:
    """Make the place ready for a command: its folders exist, and when commands run as
    another user than the hub's, the worktree and the home folder belong to that user
    (files the hub wrote since, e.g. with write_file, are handed over too). Its /tmp is
    the hub's, sticky and open to all, as a machine's /tmp is: the room writes there but
    cannot move what the hub made in it (`sandbox.mount_points_in_tmp`)."""
    if not place.worktree.is_dir():
        raise FileNotFoundError(errno.ENOENT, "the worktree is missing", str(place.worktree))
    place.tmp.mkdir(parents=True, exist_ok=True)
    home = place.tmp / "home"
    if home.is_symlink() or (home.exists() and not home.is_dir()):
        home.rename(place.tmp / f".moved-home-{os.urandom(4).hex()}")  # the room's to keep, elsewhere
    home.mkdir(exist_ok=True)
    if policy.drops_user:
        uid, gid = place.user(policy)
        os.chmod(place.tmp, 0o1777)
        os.chown(place.tmp, 0, 0, follow_symlinks=False)
        os.chown(home, uid, gid, follow_symlinks=False)
        hand_over(place.worktree, uid, gid)
        _write_identity(place.identity, uid, gid)


def mount_points_in_tmp(tmp: Path, points: list[str]) -> list[Path]:
    """Each of ``points`` (paths in the sandbox, under its /tmp) made in ``tmp`` as a folder,
    one component at a time on held descriptors, never through a link: whatever the room
    left at a component's name (a link, a file, a folder of its own) is moved aside first.
    Bubblewrap then makes no folder in the room's /tmp itself, where it would follow the
    links the room planted, as root, out to the machine's files. Returns the folders."""
    made = []
    for point in points:
        fd = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            for name in Path(point).relative_to("/tmp").parts:
                try:
                    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    info = None
                if info is not None and not (stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()):
                    os.rename(name, f".moved-{name}-{os.urandom(4).hex()}", src_dir_fd=fd, dst_dir_fd=fd)
                    info = None
                if info is None:
                    os.mkdir(name, 0o755, dir_fd=fd)
                inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = inner
        finally:
            os.close(fd)
        made.append(tmp / Path(point).relative_to("/tmp"))
    return made


def _write_identity(folder: Path, uid: int, gid: int) -> None:
    """The machine's passwd and group, with the sandbox's user (``agent``) in them."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, line in (("passwd", f"agent:x:{uid}:{gid}:room sandbox:/tmp/home:/bin/bash"),
                       ("group", f"agent:x:{gid}:")):
        try:
            host = [entry for entry in Path("/etc", name).read_text().splitlines()
                    if not entry.startswith("agent:") and entry.split(":")[2:3] != [str(uid if name == "passwd" else gid)]]
        except (OSError, UnicodeDecodeError):
            host = []
        text = "\n".join([*host, line]) + "\n"
        path = folder / name
        if not path.is_file() or path.read_text(errors="replace") != text:
            temporary = folder / f".{name}.{os.getpid()}"
            temporary.write_text(text)
            os.replace(temporary, path)


def hand_over(root: Path, uid: int, gid: int) -> int:
    """Give every entry under ``root`` (but its ``.git`` pointer) to ``uid``:``gid``;
    returns how many changed. Walks by directory descriptors (`beneath.walk_tree`) and
    never follows a link or opens a FIFO, so an entry swapped in by a running command
    can neither redirect a chown nor hold the hub."""
    changed = 0
    for directory, dirnames, filenames, dirfd in walk_tree(root):
        for name in (*dirnames, *filenames):
            if directory == "." and name == ".git":
                continue
            try:
                info = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
                if (info.st_uid, info.st_gid) != (uid, gid):
                    os.chown(name, uid, gid, dir_fd=dirfd, follow_symlinks=False)
                    changed += 1
            except FileNotFoundError:
                continue  # removed meanwhile by a running command
    info = os.stat(root, follow_symlinks=False)
    if (info.st_uid, info.st_gid) != (uid, gid):
        os.chown(root, uid, gid, follow_symlinks=False)
        changed += 1
    return changed
