"""search: grep -n over the worktree with a Python regex, bounded in matches, size and time.

Patterns run on the ``regex`` package in its ``re``-compatible mode (VERSION0), not on
``re``: ``re`` holds the GIL for a whole match, and a catastrophically backtracking
pattern such as ``(a|aa)+$`` on one long line would then freeze the worker (its lease
heartbeat, its steer polling) for minutes or hours. ``regex`` matches with the GIL
released and stops a match at the search's remaining time budget.
"""

from __future__ import annotations

import errno
import fnmatch
import functools
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import regex

from agents.tools.beneath import Located, walk

from .outcome import Result, ToolError
from .paths import beneath
from .text import BINARY_SNIFF_BYTES, looks_binary, one_line


@dataclass(frozen=True, slots=True)
class SearchLimits:
    max_matches: int = 200
    max_chars: int = 40_000
    max_line_chars: int = 300
    max_file_bytes: int = 20 * 1024 * 1024
    max_seconds: float = 20.0


def _files(place: Located, glob: str | None) -> Iterator[tuple[str, Callable[[], int]]]:
    """Each file to search: its path relative to the worktree, and how to open it (on
    the descriptor of its folder, never through a link)."""
    info = place.lstat()
    if info is not None and not stat.S_ISDIR(info.st_mode):
        yield place.relative, lambda: place.open(os.O_RDONLY)
        return
    base = "" if place.relative == "." else place.relative + "/"
    for directory, dirnames, filenames, dirfd in walk(place):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            if name == ".git":
                continue
            relative = name if directory == "." else f"{directory}/{name}"
            if glob:
                below = relative.removeprefix(base)
                if not fnmatch.fnmatch(below if "/" in glob else name, glob):
                    continue
            yield relative, functools.partial(_open_in, name, dirfd)


def _open_in(name: str, dirfd: int) -> int:
    return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dirfd)


class _TooSlow(Exception):
    """One line's match used up the rest of the time budget."""


@dataclass
class _Found:
    lines: list[str] = field(default_factory=list)
    chars: int = 0
    matches: int = 0
    files: int = 0

    def add(self, entry: str, limits: SearchLimits) -> None:
        self.matches += 1
        if len(self.lines) < limits.max_matches and self.chars < limits.max_chars:
            self.lines.append(entry)
            self.chars += len(entry) + 1


def _search_file(handle: BinaryIO, compiled: regex.Pattern[str], relative: str,
                 found: _Found, deadline: float, limits: SearchLimits) -> bool:
    """Add the file's matching lines to ``found``; False if the time budget ran out."""
    found_here = False
    for number, raw in enumerate(handle, 1):
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        try:
            hit = compiled.search(line, timeout=remaining, concurrent=True)
        except TimeoutError:
            # With only the last moments of the budget left, any long line would do that:
            # the search ran out of time, the pattern is not to blame.
            if remaining < min(1.0, limits.max_seconds / 4):
                return False
            raise _TooSlow(f"{relative}:{number}") from None
        if hit is None:
            continue
        found_here = True
        if len(line) > limits.max_line_chars:
            line = line[: limits.max_line_chars] + " [...]"
        found.add(f"{relative}:{number}: {line}", limits)
    found.files += found_here
    return True


def _search_files(files: Iterable[tuple[str, Callable[[], int]]], compiled: regex.Pattern, found: _Found,
                  skipped: list[str], deadline: float, limits: SearchLimits) -> tuple[bool, str]:
    """File after file until the deadline: (whether it was met, the line a too slow
    pattern stopped on, or "")."""
    for relative, opener in files:
        if time.monotonic() > deadline:
            return False, ""
        try:
            if not _search_one(opener, relative, compiled, found, skipped, deadline, limits):
                return False, ""
        except OSError as exc:
            skipped.append(f"{relative} ({exc.strerror})")
        except _TooSlow as exc:
            return True, str(exc)
    return True, ""


def _search_one(opener: Callable[[], int], relative: str, compiled: regex.Pattern, found: _Found,
                skipped: list[str], deadline: float, limits: SearchLimits) -> bool:
    """Searches one file unless it is not a regular text file of a readable size (a link
    is never followed); False once the deadline passed."""
    try:
        fd = opener()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return True  # a link: what it points at is searched where it lies, if inside
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return True
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > limits.max_file_bytes:
            skipped.append(f"{relative} (too large)")
            return True
        if looks_binary(handle.read(BINARY_SNIFF_BYTES)):
            return True
        handle.seek(0)
        return _search_file(handle, compiled, relative, found, deadline, limits)


def search(root: Path, *, pattern: str, path: str, glob: str | None,
           limits: SearchLimits = SearchLimits()) -> Result:
    try:
        compiled = regex.compile(pattern, flags=regex.VERSION0)
    except regex.error as exc:
        raise ToolError(f"search: invalid regex {pattern!r}: {exc}; escape special characters "
                        r"(e.g. \( \. \[) to match them literally") from None
    deadline = time.monotonic() + limits.max_seconds
    found = _Found()
    skipped: list[str] = []
    with beneath(root, path) as place:
        if place.lstat() is None:
            raise ToolError(f"{path}: no such file or directory")
        where = place.relative
        in_time, too_slow = _search_files(_files(place, glob), compiled, found, skipped, deadline, limits)
    scope = f" in {where}" + (f" ({glob})" if glob else "")
    purpose = f"search /{one_line(pattern, 60)}/{scope}"
    if too_slow:
        text = (f"search: the pattern is too slow (catastrophic backtracking?); simplify it. "
                f"/{pattern}/ used up the {limits.max_seconds:g} s budget on line {too_slow}.")
        if found.lines:
            text += "\nMatches before it stopped:\n" + "\n".join(found.lines)
        return Result(text=text, is_error=True, purpose=purpose, path=where)
    if found.matches == 0:
        text = f"No matches for /{pattern}/{scope}."
    else:
        header = f"{found.matches} matches in {found.files} files for /{pattern}/{scope}"
        if len(found.lines) < found.matches:
            header += f" (first {len(found.lines)} shown; narrow path, glob or pattern)"
        text = header + ":\n" + "\n".join(found.lines)
    if skipped:
        text += f"\n[skipped {len(skipped)} files: {', '.join(skipped[:5])}]"
    if not in_time:
        text += f"\n[stopped after {limits.max_seconds:g} s; narrow path or glob]"
    return Result(text=text, purpose=purpose, path=where)
