"""Confining tool paths to the session's worktree.

The file tools run outside the sandbox, on files the agent controls, so every path is
opened with the descriptor walk of ``agents.tools.beneath``: a symlink is followed
only while it stays inside the worktree, judged on the folders actually opened, so a
link swapped in by a running command fails the call instead of redirecting it. Paths
are judged by where they really lead, not by how they are spelled.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agents.tools.beneath import Located, MissingFolder, PathRefused, located

from .outcome import ToolError

__all__ = ["PathRefused", "ResolvedPath", "beneath", "resolve_path"]

# The intent files under .atrium/ are authoritative: only the hub writes them.
PROTECTED_FOR_WRITE = {
    ".git": "writes into .git/ are refused: change the repository through files and shell git",
    ".atrium": (
        "writes under .atrium/ are refused: the intent files there are authoritative and "
        "only the hub edits them"
    ),
}
NESTED_GIT = ("a .git entry below the top is a nested repository, which the hub never makes or "
              "commits; put files elsewhere")


@dataclass(frozen=True, slots=True)
class ResolvedPath:
    absolute: Path  # physical path, every symlink resolved
    relative: str  # posix path relative to the worktree root; "." for the root itself


def check_writable(relative: str, spelled: str) -> None:
    """Raise PathRefused when the agent may not write at ``relative`` (physical)."""
    if relative == ".":
        raise PathRefused(f"{spelled}: is the worktree root, not a file")
    parts = PurePosixPath(relative).parts
    if parts[0] in PROTECTED_FOR_WRITE:
        raise PathRefused(f"{spelled}: {PROTECTED_FOR_WRITE[parts[0]]}")
    if any(part.casefold() == ".git" for part in parts):
        raise PathRefused(f"{spelled}: {NESTED_GIT}")


@contextmanager
def beneath(root: Path, user_path: str, *, for_write: bool = False) -> Iterator[Located]:
    """The folder holding ``user_path``'s last entry, open, inside the worktree ``root``.

    For a write, missing folders are made (none where the agent may not write) and the
    place is checked as ``check_writable`` says. Errors are the agent's to read.
    """
    spelled = user_path.strip() or "."
    try:
        with located(root, spelled, links=True, make_parents=for_write,
                     may_make=lambda relative: check_writable(relative, user_path)) as where:
            if for_write and where.name == ".":
                raise PathRefused(f"{user_path}: is a directory; give a file path")
            yield where
    except FileNotFoundError as exc:
        raise ToolError(f"{user_path}: no such file or directory ({exc.filename} is missing; "
                        "use list_files to see what exists)") from None
    except NotADirectoryError as exc:
        raise ToolError(f"{user_path}: {exc.filename} is a file, not a directory") from None


def resolve_path(root: Path, user_path: str, *, for_write: bool = False) -> ResolvedPath:
    """Where ``user_path`` leads inside ``root`` (as approval rules judge it), or
    PathRefused with a reason to show. A missing tail is taken as spelled."""
    spelled = user_path.strip() or "."
    real_root = Path(os.path.realpath(root))
    try:
        with located(root, spelled, links=True) as where:
            relative = where.relative
    except MissingFolder as exc:
        relative = exc.leads_to
    except NotADirectoryError as exc:
        relative = str(exc.filename)
    if for_write:
        check_writable(relative, user_path)
    return ResolvedPath(absolute=real_root / relative if relative != "." else real_root, relative=relative)
