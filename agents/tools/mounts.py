"""The mount arguments of a room's bubblewrap sandbox (agents/tools/sandbox.py builds
the rest of its command line)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


class Mounts:
    """bwrap mount arguments, with every missing parent folder created traversable (0755):
    bubblewrap would otherwise copy the mode of the host's folder (``/root`` is 0700)."""

    def __init__(self) -> None:
        self.args: list[str] = []
        self.read_only_roots: list[str] = []
        self.writable_roots: list[str] = []
        self.made: set[str] = {"/"}
        self.in_tmp: list[str] = []  # mount points in the room's /tmp: the hub makes them (handover)

    def system(self, tree: str) -> None:
        if os.path.islink(tree):
            self.args += ["--symlink", os.readlink(tree), tree]
            self.made.add(tree)
        elif os.path.isdir(tree):
            self.args += ["--ro-bind", tree, tree]
            self.read_only_roots.append(tree)

    def read_only(self, tree: str) -> None:
        tree = os.path.realpath(tree)
        if os.path.isdir(tree) and not _under(tree, self.read_only_roots):
            self.bind(tree, writable=False)

    def hide(self, path: str) -> None:
        path = os.path.realpath(path)
        if os.path.isdir(path) and _under(path, self.read_only_roots):
            self.args += ["--tmpfs", path, "--remount-ro", path]

    def bind(self, path: str, *, writable: bool) -> None:
        self._parents(path)
        if _under(path, self.writable_roots):
            self.in_tmp.append(path)
        self.args += ["--bind" if writable else "--ro-bind", path, path]
        (self.writable_roots if writable else self.read_only_roots).append(path)

    def _parents(self, path: str) -> None:
        parts = Path(path).parts
        for k in range(2, len(parts)):
            parent = str(Path(*parts[:k]))
            if parent in self.made:
                continue
            self.made.add(parent)
            if _under(parent, self.read_only_roots):
                return  # it exists there, or cannot be made: bubblewrap says which
            if _under(parent, self.writable_roots):
                return  # in the room's /tmp: made by the hub with the mount point (in_tmp)
            self.args += ["--perms", "0755", "--dir", parent]


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)
