"""write_file, edit_file and undo_edit: every change keeps the previous content by call id."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

from .outcome import Result, ToolError
from .paths import resolve_path
from .snapshots import SNAPSHOT_MAX_BYTES, SnapshotStore, write_atomically
from .text import human_bytes, looks_binary

MAX_EDIT_BYTES = SNAPSHOT_MAX_BYTES
EXCERPT_CONTEXT = 2
EXCERPT_MAX_LINES = 30


def _line_count(text: str) -> int:
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def _undo_hint(call_id: str, stored: bool, size: int) -> str:
    if not stored:
        return f"No undo snapshot: the previous content ({human_bytes(size)}) is too large to keep."
    return f"Undo with undo_edit(call_id={call_id!r})."


def write_file(root: Path, store: SnapshotStore, *, call_id: str, path: str,
               content: str) -> Result:
    resolved = resolve_path(root, path, for_write=True)
    target, relative = resolved.absolute, resolved.relative
    before: bytes | None = None
    mode = None
    size_before = 0
    existed = target.exists()
    if existed:
        info = target.stat()
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{relative}: is a directory; give a file path")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{relative}: not a regular file")
        mode, size_before = stat.S_IMODE(info.st_mode), info.st_size
        if size_before <= SNAPSHOT_MAX_BYTES:
            before = target.read_bytes()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ToolError(f"{relative}: a parent of this path is a file, not a directory") from None
    data = content.encode()
    write_atomically(target, data, mode=mode)
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


def _read_text_for_edit(target: Path, relative: str) -> tuple[bytes, str, int]:
    if not target.exists():
        raise ToolError(f"{relative}: no such file; use write_file to create it")
    info = target.stat()
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{relative}: not a regular file")
    if info.st_size > MAX_EDIT_BYTES:
        raise ToolError(f"{relative}: {human_bytes(info.st_size)} is too large to edit here "
                        f"(limit {human_bytes(MAX_EDIT_BYTES)}); use shell tools")
    raw = target.read_bytes()
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


def edit_file(root: Path, store: SnapshotStore, *, call_id: str, path: str, old: str, new: str,
              replace_all: bool) -> Result:
    resolved = resolve_path(root, path, for_write=True)
    target, relative = resolved.absolute, resolved.relative
    raw, text, mode = _read_text_for_edit(target, relative)
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
    data = updated.encode()
    write_atomically(target, data, mode=mode)
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


def undo_edit(root: Path, store: SnapshotStore, *, call_id: str, target_call_id: str) -> Result:
    snapshot = store.load(target_call_id)
    if snapshot is None:
        raise ToolError(f"undo_edit: no write_file/edit_file call with id {target_call_id!r} "
                        "changed a file in this session")
    if not snapshot.stored:
        raise ToolError(f"undo_edit: the content before {target_call_id!r} was too large to keep; "
                        f"restore {snapshot.path} another way (e.g. git checkout in shell)")
    resolved = resolve_path(root, snapshot.path, for_write=True)
    target = resolved.absolute
    current = target.read_bytes() if target.is_file() else None
    current_sha = None if current is None else hashlib.sha256(current).hexdigest()
    if current_sha != snapshot.after_sha256:
        raise ToolError(f"undo_edit: {snapshot.path} has changed since call {target_call_id!r}; "
                        "undo the later changes first (newest first), or write the content you "
                        "want with write_file")
    if snapshot.before is not None:
        mode = stat.S_IMODE(target.stat().st_mode) if current is not None else None
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, snapshot.before, mode=mode)
        done = f"restored {snapshot.path} to its content before {target_call_id!r}"
    else:
        target.unlink()
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
