"""What one shell pipeline does to files: reads reaching its output, and side effects.

A read reaches the model only through the pipeline's standard output: ``cat a > b``
reads nothing into the context (it writes ``b``), and a pipeline through a command whose
effect on the text is unknown (``| python``, ``| awk``, ``| wc``) drops the read. Ranges
compose through ``sed -n 'a,bp'``, ``head`` and ``tail`` (``nl -ba f | sed -n '5,9p'``
reads lines 5-9); ``tail -n N f`` is a tail read (see `FileAccess`); ``grep`` on a file,
or a read piped into ``grep``, is a search. Writes come from redirections,
here-documents, ``tee``, ``touch``, ``cp``/``mv``/``rm``; edits from ``sed -i``, ``>>``,
``git checkout/restore <file>`` and ``patch <file>``. A file the command reports it could
not open is not read.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from observations.replay.paths import PathScope
from observations.replay.trajectory import FileAccess
from observations.shell.programs import program_words
from observations.shell.syntax import Pipeline, SimpleCommand, Word

_WHOLE = (1, None)
_PRINTERS = frozenset({"cat", "nl", "less", "more"})
_GREPS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack"})
# Filters that keep a listing or search a listing/search, but change read text unknowably.
_SUMMARISERS = frozenset(
    {"sort", "uniq", "wc", "cut", "awk", "sed", "tr", "xargs", "column", "grep", "egrep", "fgrep"}
)
_NL_ARG_OPTIONS = frozenset("bdfhilnsvw")
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
_FILE_NAME = re.compile(r"[^/]\.[A-Za-z0-9_]+$")
_OPEN_ERRORS = ("No such file or directory", "Is a directory", "Permission denied")


def pipeline_accesses(
    pipeline: Pipeline, *, scope: PathScope, cwd: str | None, output: str
) -> list[FileAccess]:
    """Accesses of one pipeline run in ``cwd``; ``output`` is the text the call returned."""
    return _Pipe(scope, cwd, output).run(pipeline)


class _Pipe:
    """Recognises one pipeline: what reaches its standard output, and its side effects."""

    def __init__(self, scope: PathScope, cwd: str | None, output: str) -> None:
        self.scope, self.cwd, self.output = scope, cwd, output
        self.effects: list[FileAccess] = []

    def _readable(self, words: list[Word]) -> list[str] | None:
        """Keys of files to read, or None unless every one is known and was opened."""
        if any(w.text == "-" for w in words):
            return None  # standard input mixed in: the text is not only the files'
        keys = self._keys(words)
        if len(keys) != len(words):
            return None
        # "cat: a.py: No such file...", "head: cannot open 'a.py' for reading: No such file..."
        complaints = (
            [line for line in self.output.splitlines() if line.endswith(_OPEN_ERRORS)]
            if any(error in self.output for error in _OPEN_ERRORS)
            else []
        )
        if any(word.text in line for word in words for line in complaints):
            return None
        return keys

    def run(self, pipeline: Pipeline) -> list[FileAccess]:
        stream: list[FileAccess] | None = []
        for position, command in enumerate(pipeline):
            for redirect in command.redirects:
                self._redirect_effect(redirect.op, redirect.fd, redirect.target)
            stdin = self._stdin_file(command)
            if stdin is not None:
                stream = stdin
            elif position == 0:
                stream = []
            stream = self._command(command, stream)
        if pipeline and pipeline[-1].stdout_target() is not None:
            stream = []
        return self.effects + (stream or [])

    def _key(self, word: Word) -> str | None:
        return None if word.opaque else self.scope.key(word.text, self.cwd)

    def _redirect_effect(self, op: str, fd: int | None, target: Word) -> None:
        if op not in (">", ">>", ">|", "&>", "&>>") or target.text.startswith("/dev/"):
            return
        key = self._key(target)
        if key is not None:
            self.effects.append(FileAccess("edit" if op in (">>", "&>>") else "write", key))

    def _stdin_file(self, command: SimpleCommand) -> list[FileAccess] | None:
        for r in command.redirects:
            if r.op == "<" and r.fd in (None, 0):
                key = self._key(r.target)
                return [FileAccess("read", key, *_WHOLE)] if key else None
        return None

    def _command(
        self, command: SimpleCommand, stream: list[FileAccess] | None
    ) -> list[FileAccess] | None:
        words = program_words(command.words)
        if not words:
            return stream
        name = posixpath.basename(words[0].text)
        args = words[1:]
        if name in _PRINTERS:
            return self._printer(name, args, stream)
        if name in ("head", "tail"):
            return self._head_tail(name, args, stream)
        if name == "sed":
            return self._sed(args, stream)
        if name in _GREPS:
            return self._grep(name, args, stream)
        if name == "git" and args:
            return self._git(args, stream)
        return self._file_command(name, args, stream)

    def _file_command(self, name: str, args: list[Word], stream: list[FileAccess] | None,
                      ) -> list[FileAccess] | None:
        """Listing, copying and removing programs; summarisers of a listing pass it on."""
        if name in ("ls", "tree", "dir"):
            paths = [w for w in args if not w.text.startswith("-")] or [Word(".")]
            return self._paths("list", paths)
        if name == "find":
            paths = []
            for w in args:
                if w.text.startswith(("-", "(", "!")):
                    break
                paths.append(w)
            return self._paths("list", paths or [Word(".")])
        if name == "tee":
            files = [w for w in args if not w.text.startswith("-")]
            kind = "edit" if any(w.text in ("-a", "--append") for w in args) else "write"
            self.effects.extend(FileAccess(kind, k) for k in self._keys(files))
            return stream
        if name in ("touch", "rm", "mv", "cp", "patch"):
            self._file_effects(name, args)
            return []
        if stream and all(a.kind in ("list", "search") for a in stream) and name in _SUMMARISERS:
            return stream
        return None

    def _keys(self, words: list[Word]) -> list[str]:
        return [k for k in (self._key(w) for w in words) if k is not None]

    def _paths(self, kind: str, words: list[Word]) -> list[FileAccess]:
        return [FileAccess(kind, k) for k in self._keys(words)]  # type: ignore[arg-type]

    def _printer(
        self, name: str, args: list[Word], stream: list[FileAccess] | None
    ) -> list[FileAccess] | None:
        files: list[Word] = []
        skip = False
        for w in args:
            if skip:
                skip = False
            elif w.text.startswith("-") and w.text != "-":
                # nl's short options with a separate value: -b a, -n ln, ...
                skip = name == "nl" and len(w.text) == 2 and w.text[1] in _NL_ARG_OPTIONS
            else:
                files.append(w)
        if not files:
            return stream
        keys = self._readable(files)
        if keys is None:
            return None
        return [FileAccess("read", k, *_WHOLE) for k in keys]

    def _head_tail(
        self, name: str, args: list[Word], stream: list[FileAccess] | None
    ) -> list[FileAccess] | None:
        count: str | None = "10"
        files: list[Word] = []
        it = iter(args)
        for w in it:
            t = w.text
            if t in ("-n", "--lines"):
                count = next(it, Word("")).text
            elif t.startswith("--lines="):
                count = t.split("=", 1)[1]
            elif t.startswith("-n"):
                count = t[2:]
            elif re.fullmatch(r"-\d+", t):
                count = t[1:]
            elif t in ("-q", "-v", "--quiet", "--silent", "--verbose"):
                continue
            elif t.startswith("-"):
                count = None  # bytes, follow or an option we do not model
            else:
                files.append(w)
        if files:
            keys = self._readable(files)
            sources = None if keys is None else [FileAccess("read", k, *_WHOLE) for k in keys]
        else:
            sources = stream
        if count is None or sources is None:
            return None
        return [r for r in (_limit(name, count, s) for s in sources) if r is not None] or (
            None if sources else []
        )

    def _sed(self, args: list[Word], stream: list[FileAccess] | None) -> list[FileAccess] | None:
        call = _sed_call(args)
        if call is None:
            return None  # script from a file: unknown
        if call.in_place:
            self.effects.extend(FileAccess("edit", k) for k in self._keys(call.files))
            return []
        if not call.scripts or any(s.opaque for s in call.scripts):
            return None
        ranges = _sed_ranges(";".join(s.text for s in call.scripts), call.quiet)
        if call.files:
            return self._sed_files(call.files, ranges)
        return _sed_stream(stream, ranges)

    def _sed_files(self, files: list[Word], ranges: list[tuple[int, int | None]] | str | None,
                   ) -> list[FileAccess] | None:
        keys = self._readable(files)
        if keys is None:
            return None
        if ranges == "search":
            return [FileAccess("search", k) for k in keys]
        if ranges is None or len(keys) != 1:
            return None
        return [FileAccess("read", keys[0], a, b) for a, b in ranges]

    def _grep(
        self, name: str, args: list[Word], stream: list[FileAccess] | None
    ) -> list[FileAccess] | None:
        recursive, files = _grep_files(name, args)
        if not files:
            if recursive:
                return self._paths("search", [Word(".")])
            if stream is None:
                return None
            return [FileAccess("search", a.path) if a.kind == "read" else a for a in stream]
        return self._paths("search", files)

    def _git(self, args: list[Word], stream: list[FileAccess] | None) -> list[FileAccess] | None:
        sub, rest = args[0].text, args[1:]
        if sub == "grep":
            return self._grep("rg", rest, stream)
        if sub in ("checkout", "restore"):
            if any(w.text == "--" for w in rest):
                paths = rest[[w.text for w in rest].index("--") + 1 :]
            else:
                # Without "--" an operand may name a branch; only file-like names count.
                paths = [
                    w for w in rest if not w.text.startswith("-") and _FILE_NAME.search(w.text)
                ]
            self.effects.extend(FileAccess("edit", k) for k in self._keys(paths))
            return []
        return None

    def _file_effects(self, name: str, args: list[Word]) -> None:
        operands = [w for w in args if not w.text.startswith("-")]
        if name == "patch":
            # patch [options] [originalfile [patchfile]]: only a named original is known.
            if operands and not any(w.text.startswith(("-o", "--output")) for w in args):
                self.effects.extend(FileAccess("edit", k) for k in self._keys(operands[:1]))
            return
        if name == "cp":
            operands = operands[-1:]
        self.effects.extend(FileAccess("write", k) for k in self._keys(operands))


@dataclass
class _SedCall:
    quiet: bool = False
    in_place: bool = False
    scripts: list[Word] = field(default_factory=list)
    files: list[Word] = field(default_factory=list)


def _sed_call(args: list[Word]) -> _SedCall | None:
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


def _sed_stream(stream: list[FileAccess] | None, ranges: list[tuple[int, int | None]] | str | None,
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


def _sed_ranges(script: str, quiet: bool) -> list[tuple[int, int | None]] | str | None:
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


def _limit(name: str, count: str, source: FileAccess) -> FileAccess | None:
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


def _grep_files(name: str, args: list[Word]) -> tuple[bool, list[Word]]:
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
