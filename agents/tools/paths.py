"""Confining tool paths to the session's worktree.

A path is resolved physically (every symlink, including intermediate directories,
followed) before it is checked, so ``link/../x`` and ``dir-symlink/file`` are judged by
where they really lead, not by how they are spelled.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath


class PathRefused(ValueError):
    """The path leaves the worktree or names a place the agent may not write."""


# The intent files under .atrium/ are authoritative: only the hub writes them.
PROTECTED_FOR_WRITE = {
    ".git": "writes into .git/ are refused: change the repository through files and shell git",
    ".atrium": (
        "writes under .atrium/ are refused: the intent files there are authoritative and "
        "only the hub edits them"
    ),
}


@dataclass(frozen=True, slots=True)
class ResolvedPath:
    absolute: Path  # physical path, every symlink resolved
    relative: str  # posix path relative to the worktree root; "." for the root itself


def resolve_path(root: Path, user_path: str, *, for_write: bool = False) -> ResolvedPath:
    """Resolve ``user_path`` inside ``root`` or raise PathRefused with a reason to show."""
    if "\0" in user_path:
        raise PathRefused("path contains a NUL character")
    real_root = Path(os.path.realpath(root))
    spelled = user_path.strip() or "."
    candidate = Path(spelled) if os.path.isabs(spelled) else real_root / spelled
    try:
        real = Path(os.path.realpath(candidate, strict=False))
    except OSError as exc:  # symlink loops on some platforms
        raise PathRefused(f"{user_path}: cannot be resolved ({exc.strerror or exc})") from exc
    if real != real_root and real_root not in real.parents:
        raise PathRefused(
            f"{user_path}: refused, it resolves outside the worktree ({real_root}); "
            "use paths relative to the worktree root"
        )
    relative = real.relative_to(real_root).as_posix()
    if for_write:
        if relative == ".":
            raise PathRefused(f"{user_path}: is the worktree root, not a file")
        top = PurePosixPath(relative).parts[0]
        if top in PROTECTED_FOR_WRITE:
            raise PathRefused(f"{user_path}: {PROTECTED_FOR_WRITE[top]}")
    return ResolvedPath(absolute=real, relative=relative)
