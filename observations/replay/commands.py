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

from observations.replay.command_args import (
    grep_files,
    limit,
    sed_call,
    sed_ranges,
    sed_stream,
)
from observations.replay.paths import PathScope
from observations.replay.trajectory import FileAccess
from observations.shell.programs import program_words
from observations.shell.syntax import Pipeline, SimpleCommand
from observations.shell.words import Word

_WHOLE = (1, None)
_PRINTERS = frozenset({"cat", "nl", "less", "more"})
_GREPS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack"})
# Filters that keep a listing or search a listing/search, but change read text unknowably.
_SUMMARISERS = frozenset(
    {"sort", "uniq", "wc", "cut", "awk", "sed", "tr", "xargs", "column", "grep", "egrep", "fgrep"}
)
_NL_ARG_OPTIONS = frozenset("bdfhilnsvw")
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
        return [r for r in (limit(name, count, s) for s in sources) if r is not None] or (
            None if sources else []
        )

    def _sed(self, args: list[Word], stream: list[FileAccess] | None) -> list[FileAccess] | None:
        call = sed_call(args)
        if call is None:
            return None  # script from a file: unknown
        if call.in_place:
            self.effects.extend(FileAccess("edit", k) for k in self._keys(call.files))
            return []
        if not call.scripts or any(s.opaque for s in call.scripts):
            return None
        ranges = sed_ranges(";".join(s.text for s in call.scripts), call.quiet)
        if call.files:
            return self._sed_files(call.files, ranges)
        return sed_stream(stream, ranges)

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
        recursive, files = grep_files(name, args)
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


