"""Repository-relative path keys, so every reader names a file the same way."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PathScope:
    """Normalises paths to repository-relative keys.

    ``root`` is the absolute repository root the agent worked in (``/testbed``,
    ``/workspace/<repo>``). The same file read as ``/testbed/a/b.py`` and as ``b.py``
    from ``/testbed/a`` gets the key ``a/b.py``; the root itself is ``"."``.
    """

    root: str

    def key(self, path: str, cwd: str | None) -> str | None:
        if not path or path.startswith("~"):
            return None
        if not path.startswith("/"):
            if cwd is None:
                return None
            path = posixpath.join(cwd, path)
        path = posixpath.normpath(path)
        if path.startswith("//"):
            path = path[1:]
        root = posixpath.normpath(self.root)
        if path == root:
            return "."
        if path.startswith(root.rstrip("/") + "/"):
            return path[len(root.rstrip("/")) + 1 :]
        return path
