"""Reading the arguments of the programs a recorded command line pipes through: which
lines sed prints, how many head and tail keep, which files grep reads."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from observations.replay.trajectory import FileAccess
from observations.shell.words import Word

_GREP_ARG_OPTIONS = frozenset("efmABCdD")
_RG_ARG_OPTIONS = frozenset("efmABCgtTM")
_LONG_ARG_OPTIONS = frozenset(
    {
        "--include",
        "--exclude",
        "--exclude-dir",
        "--glob",
        "--type",
        "--regexp",
        "--file",
        "--max-count",
        "--context",
        "--after-context",
        "--before-context",
        "--lines",
        "--bytes",
    }
)

_SED_RANGE = re.compile(r"^\s*(\d+|\$)\s*(?:,\s*(\d+|\$)\s*)?([pq])\s*$")
_SED_REGEX_PRINT = re.compile(r"^\s*(?:/[^/]*/|\d+)\s*(?:,\s*(?:/[^/]*/|\d+|\$)\s*)?p\s*$")


@dataclass
class _SedCall:
    quiet: bool = False
    in_place: bool = False
    scripts: list[Word] = field(default_factory=list)
    files: list[Word] = field(default_factory=list)


def sed_call(args: list[Word]) -> _SedCall | None:
    """sed's options, scripts and files; None when the script comes from a file."""
    call = _SedCall()
    it = iter(args)
    for w in it:
        t = w.text
        if t == "-f" or t.startswith("--file"):
            return None
        if t in ("-e", "--expression"):
            call.scripts.append(next(it, Word("", opaque=True)))
        elif t.startswith("--expression="):
            call.scripts.append(Word(t.split("=", 1)[1], w.opaque))
        elif t in ("-n", "--quiet", "--silent"):
            call.quiet = True
        elif t.startswith("--in-place") or (t.startswith("-i") and not t.startswith("--")):
            call.in_place = True
        elif t.startswith("-") and len(t) > 1 and not t.startswith("--"):
            _sed_flags(call, t[1:], it)
        elif not t.startswith("--"):
            (call.files if call.scripts else call.scripts).append(w)
    return call


def _sed_flags(call: _SedCall, flags: str, it) -> None:
    """Bundled short options (``-ne``): an ``e`` at the end takes the next word as a script."""
    call.quiet = call.quiet or "n" in flags
    call.in_place = call.in_place or "i" in flags
    if flags.endswith("e"):
        call.scripts.append(next(it, Word("", opaque=True)))


def sed_stream(stream: list[FileAccess] | None, ranges: list[tuple[int, int | None]] | str | None,
                ) -> list[FileAccess] | None:
    """What sed passes on of the text piped into it."""
    if stream and all(a.kind in ("list", "search") for a in stream):
        return stream
    if ranges == "search" and stream:
        return [FileAccess("search", a.path) for a in stream]
    if ranges is None or ranges == "search" or not stream or len(stream) != 1:
        return None
    out = [_sub_range(stream[0], a, b) for a, b in ranges]
    return None if any(o is None for o in out) else out  # type: ignore[return-value]


def sed_ranges(script: str, quiet: bool) -> list[tuple[int, int | None]] | str | None:
    """Line ranges a sed script prints, "search" for regex-addressed prints, else None."""
    parts = [p for p in re.split(r"[;\n]", script) if p.strip()]
    if not parts:
        return None
    ranges: list[tuple[int, int | None]] = []
    stop: int | None = None
    for part in parts:
        m = _SED_RANGE.match(part)
        if m is None:
            if quiet and _SED_REGEX_PRINT.match(part):
                return "search"
            return None
        a, b, command = m.groups()
        first = None if a == "$" else int(a)
        last = first if b is None else (None if b == "$" else int(b))
        if command == "q":
            if b is not None or first is None:
                return None
            stop = first if stop is None else min(stop, first)
            continue
        if first is None or (last is not None and last < first):
            return None  # "$p" needs the file length; "5,3p" prints only line 5
        ranges.append((first, last))
    if not quiet:
        # Without -n sed prints every line (once more for each p): the whole text, up to q.
        return [(1, stop)]
    if stop is not None:
        ranges = [(a, stop if b is None else min(b, stop)) for a, b in ranges if a <= stop]
    return ranges or None


def _sub_range(source: FileAccess, first: int, last: int | None) -> FileAccess | None:
    """Lines first..last of the text ``source`` produced, as a range of its file."""
    if source.kind != "read" or source.is_tail or source.start is None:
        return None
    start = source.start + first - 1
    end = None if last is None else source.start + last - 1
    if source.end is not None:
        if start > source.end:
            return None
        end = source.end if end is None else min(end, source.end)
    return FileAccess("read", source.path, start, end)


def limit(name: str, count: str, source: FileAccess) -> FileAccess | None:
    if source.kind != "read":
        return source
    if name == "head":
        if not (count.isascii() and count.isdigit()) or int(count) == 0:
            return None
        return _sub_range(source, 1, int(count))
    if count.startswith("+") and count[1:].isascii() and count[1:].isdigit():
        return _sub_range(source, int(count[1:]), None)
    if not (count.isascii() and count.isdigit()) or int(count) == 0 or source.start is None or source.is_tail:
        return None
    n = int(count)
    if source.end is not None:
        return FileAccess("read", source.path, max(source.start, source.end - n + 1), source.end)
    if source.start == 1:
        return FileAccess("read", source.path, -n, None)
    return None


def grep_files(name: str, args: list[Word]) -> tuple[bool, list[Word]]:
    """Whether a grep-like call searches recursively, and the files it names (its
    operands after the pattern, unless -e/-f gave the pattern)."""
    arg_options = _RG_ARG_OPTIONS if name in ("rg", "ag", "ack") else _GREP_ARG_OPTIONS
    recursive = name in ("rg", "ag", "ack")
    pattern_given = False
    operands: list[Word] = []
    it = iter(args)
    for w in it:
        t = w.text
        if t == "--":
            operands.extend(it)
            break
        if t.startswith("--"):
            option = t.split("=", 1)[0]
            recursive = recursive or option in ("--recursive", "--dereference-recursive")
            pattern_given = pattern_given or option in ("--regexp", "--file")
            if "=" not in t and option in _LONG_ARG_OPTIONS:
                next(it, None)
        elif t.startswith("-") and len(t) > 1:
            flags_recursive, flags_pattern = _grep_short_flags(t[1:], arg_options, it)
            recursive, pattern_given = recursive or flags_recursive, pattern_given or flags_pattern
        else:
            operands.append(w)
    return recursive, operands if pattern_given else operands[1:]


def _grep_short_flags(flags: str, arg_options: frozenset[str], it) -> tuple[bool, bool]:
    """(recursive, pattern given) for a cluster of short flags; a flag that takes a value
    ends the cluster, and takes the next word when it is the cluster's last letter."""
    recursive = pattern_given = False
    for i, flag in enumerate(flags):
        if flag in "rR":
            recursive = True
        if flag in arg_options:
            pattern_given = pattern_given or flag in "ef"
            if i == len(flags) - 1:
                next(it, None)
            break
    return recursive, pattern_given
