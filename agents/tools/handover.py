"""Making a sandbox's place ready for a command: its folders exist, and where commands run
as the room's own user, the worktree and temp folder belong to that user, handed over
without following a link or opening a FIFO a running command may have swapped in."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING

from agents.tools.beneath import walk_tree

if TYPE_CHECKING:
    from agents.tools.sandbox import Place, SandboxPolicy


def prepare(policy: SandboxPolicy, place: Place) -> None:
    """Make the place ready for a command: its folders exist, and when commands run as
    another user than the hub's, the worktree and temp folder belong to that user
    (files the hub wrote since, e.g. with write_file, are handed over too)."""
    if not place.worktree.is_dir():
        raise FileNotFoundError(errno.ENOENT, "the worktree is missing", str(place.worktree))
    place.tmp.mkdir(parents=True, exist_ok=True)
    (place.tmp / "home").mkdir(exist_ok=True)
    if policy.drops_user:
        uid, gid = place.user(policy)
        for path in (place.tmp, place.tmp / "home"):
            os.chown(path, uid, gid, follow_symlinks=False)
        hand_over(place.worktree, uid, gid)
        _write_identity(place.identity, uid, gid)


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
