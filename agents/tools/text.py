"""Text helpers shared by the tools: bounding output, spotting binary data, hashing."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

# A NUL byte in the first block is how git and grep tell binary from text.
BINARY_SNIFF_BYTES = 8192

# Shown in place of a NUL character (`git ls-files -z`, `find -print0`, a .pyc on stdout).
NUL_MARKER = "\u2400"  # ␀
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

_ANSI_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def looks_binary(head: bytes) -> bool:
    return b"\0" in head[:BINARY_SNIFF_BYTES]


def file_looks_binary(path: Path) -> bool:
    with path.open("rb") as handle:
        return looks_binary(handle.read(BINARY_SNIFF_BYTES))


def human_bytes(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def clean_terminal_output(text: str) -> str:
    """Drop colour codes and keep only the last repaint of carriage-return progress lines."""
    text = _ANSI_ESCAPE.sub("", text)
    if "\r" not in text:
        return text
    text = text.replace("\r\n", "\n")
    return "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))


def elide_middle(text: str, max_chars: int) -> str:
    """Keep the head and (the larger) tail of ``text``, saying exactly what was left out.

    Command output is read for its tail (the error, the summary line) first, so the
    tail gets two thirds of the room.
    """
    if len(text) <= max_chars:
        return text
    head_chars = max_chars // 3
    tail_chars = max_chars - head_chars
    head = text[:head_chars]
    tail = text[-tail_chars:]
    # Cut at line boundaries so no half-lines appear around the note.
    if "\n" in head:
        head = head[: head.rfind("\n") + 1]
    if "\n" in tail:
        tail = tail[tail.find("\n") + 1 :]
    omitted = text[len(head) : len(text) - len(tail)]
    note = (
        f"[... {omitted.count(chr(10))} lines ({len(omitted)} characters) elided from the "
        "middle ...]\n"
    )
    return head + note + tail


def read_log_bounded(path: Path, max_chars: int) -> str:
    """The text of a (possibly huge, still growing) log: whole when small, head + tail if not.

    Only the two ends are read from disk, so a gigabyte of output costs nothing.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return ""
    with path.open("rb") as handle:
        def read(start: int, length: int) -> bytes:
            handle.seek(start)
            return handle.read(length)

        return read_bounded(size, read, max_chars)


def read_bounded(size: int, read: Callable[[int, int], bytes], max_chars: int) -> str:
    """``read_log_bounded`` over any source of ``size`` bytes: ``read(start, length)``."""
    # Bytes per character is at most 4 in UTF-8; read a little extra so cutting at
    # line boundaries still leaves enough text.
    window = max_chars * 2
    if size <= window:
        return elide_middle(clean_terminal_output(read(0, size).decode("utf-8", "replace")), max_chars)
    head = read(0, window // 3)
    tail_start = size - (window - window // 3)
    tail = read(tail_start, size - tail_start)
    head_text = clean_terminal_output(head.decode("utf-8", "replace"))
    tail_text = clean_terminal_output(tail.decode("utf-8", "replace"))
    head_text = head_text[: max_chars // 3]
    tail_text = tail_text[-(max_chars - max_chars // 3) :]
    if "\n" in head_text:
        head_text = head_text[: head_text.rfind("\n") + 1]
    if "\n" in tail_text:
        tail_text = tail_text[tail_text.find("\n") + 1 :]
    omitted_bytes = size - len(head_text.encode()) - len(tail_text.encode())
    return (
        head_text
        + f"[... {human_bytes(max(omitted_bytes, 0))} of output elided from the middle ...]\n"
        + tail_text
    )


def one_line(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def clean_text(text: str) -> str:
    """``text`` made storable: PostgreSQL text and jsonb refuse NUL, and UTF-8 (so every
    database, file and socket) cannot encode a lone surrogate.

    NUL becomes ``NUL_MARKER``; a lone surrogate (an undecodable byte of a file name, a
    ``\\udcxx`` escape in JSON) becomes U+FFFD, while a surrogate pair spelled as two
    code points becomes the character it encodes. Anything else is returned unchanged.
    """
    if _UNSTORABLE.search(text) is None:
        return text
    text = text.replace("\x00", NUL_MARKER)
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean_data(value: Any) -> Any:
    """``clean_text`` over every string (keys included) of plain JSON-like data."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_data(key): clean_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(clean_data(item) for item in value)
    return value
