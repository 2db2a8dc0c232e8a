"""read_file and list_files: looking at the worktree without changing it."""

from __future__ import annotations

import codecs
import fnmatch
import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from agents.tools.beneath import Located, walk

from .outcome import Result, ToolError
from .paths import beneath
from .text import BINARY_SNIFF_BYTES, human_bytes, looks_binary


@dataclass(frozen=True, slots=True)
class ReadLimits:
    max_lines: int = 2000
    max_bytes: int = 100 * 1024
    max_line_chars: int = 2000  # longer lines are cut, with a note on the line


@dataclass(frozen=True, slots=True)
class ListLimits:
    max_entries: int = 500
    max_scanned: int = 100_000


# A line is read from disk in pieces of at most this size, so a single gigantic
# line (minified code, a data dump) never has to fit in memory.
_CHUNK = 1024 * 1024


@contextmanager
def open_regular(root: Path, path: str) -> Iterator[tuple[BinaryIO, str, os.stat_result]]:
    """A regular file of the worktree opened for reading, its relative path and its
    status, judged on the open descriptor (what is checked is what is read)."""
    with beneath(root, path) as where:
        try:
            fd = where.open(os.O_RDONLY)
        except FileNotFoundError:
            raise ToolError(f"{path}: no such file (use list_files to see what exists)") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            if stat.S_ISDIR(info.st_mode):
                raise ToolError(f"{where.relative}: is a directory; use list_files to see inside it")
            raise ToolError(f"{where.relative}: not a regular file (device, socket or pipe)")
        with os.fdopen(fd, "rb") as handle:
            yield handle, where.relative, info


def read_file(root: Path, *, path: str, start: int, end: int | None,
              limits: ReadLimits = ReadLimits()) -> Result:
    if end is not None and end < start:
        raise ToolError(f"read_file: end ({end}) is before start ({start})")
    with open_regular(root, path) as (handle, relative, info):
        purpose = f"read {relative}"
        if looks_binary(handle.read(BINARY_SNIFF_BYTES)):
            return Result(
                text=f"{relative}: binary file, {info.st_size} bytes, not shown.",
                purpose=purpose, path=relative,
            )
        handle.seek(0)
        scan = _scan(handle, relative, start, end, limits)
    fingerprint = scan.whole.hexdigest()
    if scan.total == 0:
        return Result(text=f"{relative}: empty file (0 lines).", purpose=purpose,
                      path=relative, file_sha256=fingerprint)
    if scan.first is None or scan.last is None:
        raise ToolError(f"read_file: start={start} is past the end: {relative} has {scan.total} lines")
    first, last, total = scan.first, scan.last, scan.total
    width = len(str(last))
    header = f"{relative}: lines {first}-{last} of {total}"
    if scan.crlf:
        header += " (CRLF line endings)"
    body = "\n".join(f"{number:>{width}}\t{text}" for number, text in scan.shown)
    notes = []
    if last < total and (end is None or last < end):
        notes.append(
            f"[{total - last} more lines not shown (per-call cap: {limits.max_lines} lines or "
            f"{human_bytes(limits.max_bytes)}); continue with start={last + 1}]"
        )
    if end is not None and end > total:
        notes.append(f"[end={end} is past the end of the file; it has {total} lines]")
    text = header + "\n" + body + ("\n" + "\n".join(notes) if notes else "")
    return Result(
        text=text,
        purpose=f"{purpose} lines {first}-{last}",
        path=relative,
        line_start=first,
        line_end=last,
        file_sha256=fingerprint,
        range_sha256=scan.in_range.hexdigest(),
    )


@dataclass
class _Scan:
    """One pass over a file: the lines shown, the fingerprints of the whole file and of
    the lines in range, and the number of lines."""

    shown: list[tuple[int, str]] = field(default_factory=list)
    shown_bytes: int = 0
    whole: Any = field(default_factory=hashlib.sha256)
    in_range: Any = field(default_factory=hashlib.sha256)
    first: int | None = None  # the lines actually returned
    last: int | None = None
    total: int = 0
    crlf: bool = False

    def keep(self, text: str, number: int, line_bytes: int, limits: ReadLimits) -> None:
        self.shown_bytes += _append(self.shown, text, number, line_bytes, limits)
        self.first = self.first or number
        self.last = number

    def full(self, limits: ReadLimits) -> bool:
        return len(self.shown) >= limits.max_lines or self.shown_bytes >= limits.max_bytes


def _scan(handle: BinaryIO, relative: str, start: int, end: int | None, limits: ReadLimits) -> _Scan:
    scan = _Scan()
    stopped_by_cap = False
    line_no = 0
    collecting = False
    line_parts: list[bytes] = []  # the part of the current line kept for display
    kept = 0
    line_len = 0
    decoder = codecs.getincrementaldecoder("utf-8")()
    while chunk := handle.readline(_CHUNK):
        scan.whole.update(chunk)
        if line_len == 0:  # a new line begins
            line_no += 1
            collecting = (
                not stopped_by_cap and line_no >= start and (end is None or line_no <= end)
            )
            line_parts, kept = [], 0
        line_len += len(chunk)
        if collecting:
            scan.in_range.update(chunk)
            room = limits.max_line_chars * 4 - kept
            if room > 0:
                line_parts.append(chunk[:room])
                kept += min(len(chunk), room)
        if not chunk.endswith(b"\n"):
            continue  # the line goes on in the next chunk (or the file ends)
        if collecting:
            text = _decode_line(decoder, b"".join(line_parts), relative, line_no)
            scan.crlf = scan.crlf or text.endswith("\r\n")
            scan.keep(text.rstrip("\n").removesuffix("\r"), line_no, line_len, limits)
            stopped_by_cap = scan.full(limits)
        line_len = 0
    if line_len and collecting:  # last line without a newline
        text = _decode_line(decoder, b"".join(line_parts), relative, line_no)
        scan.keep(text.removesuffix("\r"), line_no, line_len, limits)
    scan.total = line_no
    return scan


def _decode_line(decoder: codecs.IncrementalDecoder, raw: bytes, relative: str, number: int) -> str:
    decoder.reset()
    try:
        # final=False: a multi-byte character cut by the display cap is not an error.
        return decoder.decode(raw, final=False)
    except UnicodeDecodeError:
        raise ToolError(
            f"{relative}: line {number} is not UTF-8 text; the file is shown only as text "
            "(use shell, e.g. `file` or `xxd`, to inspect it)"
        ) from None


def _append(shown: list[tuple[int, str]], text: str, number: int, line_bytes: int,
            limits: ReadLimits) -> int:
    if len(text) > limits.max_line_chars:
        text = (text[: limits.max_line_chars]
                + f" [... line cut: {human_bytes(line_bytes)} in total]")
    shown.append((number, text))
    return len(text.encode()) + 8


def _listing(place: Located, pattern: str | None, limits: ListLimits) -> tuple[list[str], int, bool]:
    """The entries under ``place`` (links shown, never followed): those shown, how many
    matched, and whether the scan stopped at its cap."""
    base = "" if place.relative == "." else place.relative + "/"
    matches: list[str] = []
    total = scanned = 0
    for directory, dirnames, filenames, dirfd in walk(place):
        # Sorted in place so the walk (and the output) is deterministic.
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        # A link is listed as one, whatever it points at: never followed, not even to say.
        entries = [(name, _is_link(name, dirfd)) for name in filenames if name != ".git"]
        for name, is_link in sorted(entries):
            scanned += 1
            if scanned > limits.max_scanned:
                return matches, total, True
            shown = name if directory == "." else f"{directory}/{name}"
            below = shown.removeprefix(base)
            if pattern and not fnmatch.fnmatch(below if "/" in pattern else name, pattern):
                continue
            total += 1
            if len(matches) < limits.max_entries:
                matches.append(shown + (" (symlink, not followed)" if is_link else ""))
    return matches, total, False


def _is_link(name: str, dirfd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dirfd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def list_files(root: Path, *, path: str, pattern: str | None,
               limits: ListLimits = ListLimits()) -> Result:
    with beneath(root, path) as place:
        info = place.lstat()
        if info is None:
            raise ToolError(f"{path}: no such directory")
        if not stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{place.relative}: is a file, not a directory; use read_file")
        where = place.relative
        matches, total, truncated_scan = _listing(place, pattern, limits)
    what = f"files matching {pattern!r}" if pattern else "files"
    if not matches:
        return Result(text=f"No {what} under {where}.", purpose=f"list {where}", path=where)
    lines = [f"{total} {what} under {where}" + (":" if total == len(matches) else
             f" (first {len(matches)} shown; narrow with path or pattern):")]
    lines += matches
    if truncated_scan:
        lines.append(f"[stopped after scanning {limits.max_scanned} entries; narrow the path]")
    return Result(text="\n".join(lines), purpose=f"list {where}" + (f" {pattern}" if pattern else ""),
                  path=where)
