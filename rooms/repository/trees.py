"""A tree as git holds it: each path with its mode and size. What a checkout of it writes
is every path's size, however the files were linked where the tree was made (a hard link
counts once on the disk that made it, and once per path in every checkout after), so
what a tree may bring into a room is judged here, on git's objects, before anything is
written."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rooms.repository.git import git_records


@dataclass(frozen=True, slots=True)
class Entry:
    mode: str
    size: int  # 0 for a gitlink
    path: str


def tree_entries(repo: Path, ref: str) -> Iterator[Entry]:
    """The entries of ``ref``'s tree, as git lists them: stop reading whenever (a tree may
    hold far more paths than a checkout may, and its listing far more than memory)."""
    for record in git_records("ls-tree", "-r", "-z", "-l", "--full-tree", ref, cwd=repo, timeout=300):
        if not record:
            continue
        meta, _, path = record.partition("\t")
        mode, _kind, _oid, size = meta.split()
        yield Entry(mode=mode, size=int(size) if size.isdigit() else 0, path=path)


def too_large(entries: Iterable[Entry], *, max_bytes: int, max_files: int) -> str | None:
    """Why a checkout of these entries would take too much (their sizes, their number), or
    None; read only as far as it takes to tell."""
    total = 0
    for count, entry in enumerate(entries, start=1):
        total += entry.size
        if total > max_bytes:
            return f"its files add up to more than the {max_bytes >> 20} MB a room's checkout may hold"
        if count > max_files:
            return f"it holds more than the {max_files:,} files a room's checkout may hold"
    return None


def checkout_refused(repo: Path, ref: str, *, max_bytes: int, max_files: int) -> str | None:
    """``too_large`` for ``ref``'s tree, with git stopped as soon as it is decided."""
    with contextlib.closing(tree_entries(repo, ref)) as entries:
        return too_large(entries, max_bytes=max_bytes, max_files=max_files)
