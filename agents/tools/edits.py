"""write_file, edit_file and undo_edit: every change keeps the previous content by call id."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from agents.tools.beneath import Located, remove, write_atomically

from .outcome import NotRun, Result, ToolError, out_of_space
from .paths import PathRefused, beneath
from .snapshots import SNAPSHOT_MAX_BYTES, SnapshotStore
from .text import human_bytes, looks_binary

MAX_EDIT_BYTES = SNAPSHOT_MAX_BYTES
EXCERPT_CONTEXT = 2
EXCERPT_MAX_LINES = 30


def _replace_file(where: Located, data: bytes, *, mode: int | None) -> None:
    """The call's change; a full disk refusing it leaves the file as it was (NotRun)."""
    try:
        write_atomically(where, data, mode=mode)
    except OSError as exc:
        if out_of_space(exc):
            raise NotRun(exc) from exc
        raise


def _line_count(text: str) -> int:
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def _undo_hint(call_id: str, stored: bool, size: int) -> str:
    if not stored:
        return f"No undo snapshot: the previous content ({human_bytes(size)}) is too large to keep."
    return f"Undo with undo_edit(call_id={call_id!r})."


def _existing(where: Located, relative: str, limit: int | None) -> tuple[bytes | None, os.stat_result | None]:
    """What is at the place now, read through the descriptor that was checked: its bytes
    (None when larger than ``limit``) and status, or (None, None) when nothing is there."""
    try:
        fd = where.open(os.O_RDONLY)
    except FileNotFoundError:
        return None, None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ToolError(f"{relative}: is a directory; give a file path" if stat.S_ISDIR(info.st_mode)
                        else f"{relative}: not a regular file")
    with os.fdopen(fd, "rb") as handle:
        return (handle.read() if limit is None or info.st_size <= limit else None), info


def write_file(root: Path, store: SnapshotStore, *, call_id: str, path: str,
               content: str) -> Result:
    data = content.encode()
    with beneath(root, path, for_write=True) as where:
        relative = where.relative
        before, info = _existing(where, relative, SNAPSHOT_MAX_BYTES)
        _replace_file(where, data, mode=None if info is None else stat.S_IMODE(info.st_mode))
    existed, size_before = info is not None, 0 if info is None else info.st_size
    stored = store.save(call_id=call_id, path=relative, existed=existed, before=before,
                        after=data)
    if before is not None:
        was = f"replaced ({_line_count(before.decode('utf-8', 'replace'))} lines before)"
    else:
        was = "replaced" if existed else "created"
    text = (f"Wrote {relative}: {_line_count(content)} lines, {human_bytes(len(data))}; {was}. "
            + _undo_hint(call_id, stored, size_before))
    return Result(text=text, purpose=f"write {relative}", path=relative,
                  file_sha256=hashlib.sha256(data).hexdigest(), modified_files=True)


def _read_text_for_edit(where: Located, relative: str) -> tuple[bytes, str, int]:
    raw, info = _existing(where, relative, MAX_EDIT_BYTES)
    if info is None:
        raise ToolError(f"{relative}: no such file; use write_file to create it")
    if raw is None:
        raise ToolError(f"{relative}: {human_bytes(info.st_size)} is too large to edit here "
                        f"(limit {human_bytes(MAX_EDIT_BYTES)}); use shell tools")
    if looks_binary(raw):
        raise ToolError(f"{relative}: binary file, {len(raw)} bytes; edit_file works on text")
    try:
        return raw, raw.decode("utf-8"), stat.S_IMODE(info.st_mode)
    except UnicodeDecodeError as exc:
        raise ToolError(f"{relative}: not UTF-8 text (byte {exc.start}); edit_file works on "
                        "UTF-8 text") from None


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _why_not_found(text: str, old: str, relative: str) -> str:
    """Explain a failed match in a way that tells the model what to do next."""
    file_lines = text.splitlines()
    old_lines = [line.strip() for line in old.strip("\n").splitlines()]
    span = len(old_lines)
    if span and any(old_lines):
        for index in range(len(file_lines) - span + 1):
            window = [line.strip() for line in file_lines[index : index + span]]
            if window == old_lines:
                return (f"{relative}: old text not found exactly, but lines {index + 1}-"
                        f"{index + span} match if indentation and trailing spaces are ignored; "
                        "copy the exact text (read_file shows it after the tab) and retry")
        first = next(line for line in old_lines if line)
        hits = [n for n, line in enumerate(file_lines, 1) if line.strip() == first]
        if hits:
            shown = ", ".join(map(str, hits[:5]))
            return (f"{relative}: old text not found; its first line matches line(s) {shown} but "
                    "the lines after it differ; re-read that part and retry")
    return (f"{relative}: old text not found ({_line_count(text)} lines); read the file and "
            "copy the text exactly")


def _excerpt(text: str, first: int, last: int) -> str:
    lines = text.splitlines()
    lo = max(1, first - EXCERPT_CONTEXT)
    hi = min(len(lines), last + EXCERPT_CONTEXT, lo + EXCERPT_MAX_LINES - 1)
    width = len(str(hi))
    return "\n".join(f"{n:>{width}}\t{lines[n - 1]}" for n in range(lo, hi + 1))


def edit_refusal(root: Path, *, path: str, old: str, new: str, replace_all: bool) -> str | None:
    """Why edit_file would refuse this edit as the worktree stands (no such file, the old
    text not there, or there more than once), by the same checks; None if it may apply.
    A look only: the walk makes no folder (one that refuses the write itself is for the
    call, once approved, to report)."""
    try:
        with beneath(root, path) as where:
            _, text, _ = _read_text_for_edit(where, where.relative)
            _replaced(text, old, new, replace_all, where.relative)
    except (ToolError, PathRefused) as exc:
        return str(exc)
    except OSError as exc:  # e.g. a socket, or a file the command made unreadable
        return f"edit_file failed: {exc.strerror or exc} ({path})"
    return None


def edit_file(root: Path, store: SnapshotStore, *, call_id: str, path: str, old: str, new: str,
              replace_all: bool) -> Result:
    with beneath(root, path, for_write=True) as where:
        relative = where.relative
        raw, text, mode = _read_text_for_edit(where, relative)
        updated, count, first_offset = _replaced(text, old, new, replace_all, relative)
        data = updated.encode()
        _replace_file(where, data, mode=mode)
    stored = store.save(call_id=call_id, path=relative, existed=True, before=raw, after=data)
    first_line = _line_of(updated, first_offset)
    last_line = first_line + max(new.count("\n") - (1 if new.endswith("\n") else 0), 0)
    replaced = f"{count} occurrences" if replace_all and count > 1 else "1 occurrence"
    body = _excerpt(updated, first_line, last_line) if updated else "(the file is now empty)"
    text_out = (f"Edited {relative}: replaced {replaced}; now {_line_count(updated)} lines. "
                f"Around line {first_line}:\n{body}\n" + _undo_hint(call_id, stored, len(raw)))
    return Result(text=text_out, purpose=f"edit {relative}", path=relative,
                  line_start=first_line, line_end=last_line,
                  file_sha256=hashlib.sha256(data).hexdigest(), modified_files=True)


def _replaced(text: str, old: str, new: str, replace_all: bool, relative: str) -> tuple[str, int, int]:
    """``text`` with the edit made: (the new text, how many were replaced, where the first was)."""
    if old == new:
        raise ToolError("edit_file: old and new are identical; nothing to change")
    # Files with CRLF endings are edited with the model's LF text translated to match.
    if "\r\n" in text and "\r" not in old and text.count(old) == 0:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    count = text.count(old)
    if count == 0:
        raise ToolError(_why_not_found(text.replace("\r\n", "\n"), old.replace("\r\n", "\n"),
                                       relative))
    if count > 1 and not replace_all:
        lines, offset = [], text.find(old)
        while offset != -1 and len(lines) < 10:
            lines.append(str(_line_of(text, offset)))
            offset = text.find(old, offset + 1)
        raise ToolError(f"{relative}: old text occurs {count} times (starting at lines "
                        f"{', '.join(lines)}); include more surrounding lines to make it unique, "
                        "or set replace_all to true")
    first_offset = text.find(old)
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return updated, count, first_offset


def undo_edit(root: Path, store: SnapshotStore, *, call_id: str, target_call_id: str) -> Result:
    snapshot = store.load(target_call_id)
    if snapshot is None:
        raise ToolError(f"undo_edit: no write_file/edit_file call with id {target_call_id!r} "
                        "changed a file in this session")
    if not snapshot.stored:
        raise ToolError(f"undo_edit: the content before {target_call_id!r} was too large to keep; "
                        f"restore {snapshot.path} another way (e.g. git checkout in shell)")
    with beneath(root, snapshot.path, for_write=True) as where:
        current, info = _existing(where, snapshot.path, None)
        current_sha = None if current is None else hashlib.sha256(current).hexdigest()
        if current_sha != snapshot.after_sha256:
            raise ToolError(f"undo_edit: {snapshot.path} has changed since call {target_call_id!r}; "
                            "undo the later changes first (newest first), or write the content you "
                            "want with write_file")
        if snapshot.before is not None:
            _replace_file(where, snapshot.before, mode=None if info is None else stat.S_IMODE(info.st_mode))
            done = f"restored {snapshot.path} to its content before {target_call_id!r}"
        else:
            remove(where)
            done = f"deleted {snapshot.path}, which {target_call_id!r} had created"
    # The undo is itself undoable.
    store.save(call_id=call_id, path=snapshot.path, existed=current is not None,
               before=current, after=snapshot.before)
    after = snapshot.before
    lines = "" if after is None else f" ({_line_count(after.decode('utf-8', 'replace'))} lines)"
    return Result(
        text=f"Undo: {done}{lines}. {_undo_hint(call_id, True, 0)}",
        purpose=f"undo {target_call_id} on {snapshot.path}", path=snapshot.path,
        file_sha256=None if after is None else hashlib.sha256(after).hexdigest(),
        modified_files=True,
    )
