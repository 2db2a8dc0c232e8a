"""search: grep -n over the worktree with a Python regex, bounded in matches, size and time."""

from __future__ import annotations

import fnmatch
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .outcome import Result, ToolError
from .paths import resolve_path
from .text import BINARY_SNIFF_BYTES, looks_binary, one_line


@dataclass(frozen=True, slots=True)
class SearchLimits:
    max_matches: int = 200
    max_chars: int = 40_000
    max_line_chars: int = 300
    max_file_bytes: int = 20 * 1024 * 1024
    max_seconds: float = 20.0


def _files(base: Path, glob: str | None) -> Iterator[Path]:
    if base.is_file():
        yield base
        return
    for directory, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        here = Path(directory)
        for name in sorted(filenames):
            if name == ".git":
                continue
            full = here / name
            if glob:
                below = full.relative_to(base).as_posix()
                if not fnmatch.fnmatch(below if "/" in glob else name, glob):
                    continue
            yield full


def search(root: Path, *, pattern: str, path: str, glob: str | None,
           limits: SearchLimits = SearchLimits()) -> Result:
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"search: invalid regex {pattern!r}: {exc}; escape special characters "
                        r"(e.g. \( \. \[) to match them literally") from None
    resolved = resolve_path(root, path)
    if not resolved.absolute.exists():
        raise ToolError(f"{path}: no such file or directory")
    real_root = Path(os.path.realpath(root))
    started = time.monotonic()
    lines_out: list[str] = []
    chars = matches = 0
    files_with_matches = 0
    skipped: list[str] = []
    stopped = ""
    for file in _files(resolved.absolute, glob):
        if time.monotonic() - started > limits.max_seconds:
            stopped = f"stopped after {limits.max_seconds:g} s; narrow path or glob"
            break
        relative = file.relative_to(real_root).as_posix()
        try:
            if file.is_symlink() or not file.is_file():
                continue
            if file.stat().st_size > limits.max_file_bytes:
                skipped.append(f"{relative} (too large)")
                continue
            with file.open("rb") as handle:
                if looks_binary(handle.read(BINARY_SNIFF_BYTES)):
                    continue
                handle.seek(0)
                found_here = False
                for number, raw in enumerate(handle, 1):
                    line = raw.decode("utf-8", "replace").rstrip("\r\n")
                    if not regex.search(line):
                        continue
                    matches += 1
                    found_here = True
                    if len(lines_out) < limits.max_matches and chars < limits.max_chars:
                        if len(line) > limits.max_line_chars:
                            line = line[: limits.max_line_chars] + " [...]"
                        entry = f"{relative}:{number}: {line}"
                        lines_out.append(entry)
                        chars += len(entry) + 1
                files_with_matches += found_here
        except OSError as exc:
            skipped.append(f"{relative} ({exc.strerror})")
    where = resolved.relative
    scope = f" in {where}" + (f" ({glob})" if glob else "")
    if matches == 0:
        text = f"No matches for /{pattern}/{scope}."
    else:
        header = f"{matches} matches in {files_with_matches} files for /{pattern}/{scope}"
        if len(lines_out) < matches:
            header += f" (first {len(lines_out)} shown; narrow path, glob or pattern)"
        text = header + ":\n" + "\n".join(lines_out)
    if skipped:
        text += f"\n[skipped {len(skipped)} files: {', '.join(skipped[:5])}]"
    if stopped:
        text += f"\n[{stopped}]"
    return Result(text=text, purpose=f"search /{one_line(pattern, 60)}/{scope}", path=where)
