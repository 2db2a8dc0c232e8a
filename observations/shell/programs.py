"""What a shell line runs: every program, seen through wrappers, shells and ``eval``.

`read_line` parses a line with `observations.shell.syntax` and follows each simple
command to the programs it starts: past reserved words and ``NAME=value``, through
wrappers and their options (``timeout -s KILL 5 rm``, ``env -i X=1 rm``, ``sudo -u x rm``),
into ``bash -c '...'``, ``eval ...``, ``$(...)``, ``find -exec ...``, ``xargs ...``,
``python -m ...``, ``git submodule foreach ...``. ``/bin/rm`` and ``\\rm`` are ``rm``.

Programs that run code (or a command) given in their arguments (``python -c``,
``git -c``, ``make -f``, ``pip install``, ``npm exec``, ``pytest -p``, ``awk``, ``sed e``,
``find -exec``, ``bash -c``, ``eval``) are marked ``runs_code``: what they run can be
looked into only partly, so no prefix can vouch for them. What cannot be seen at all
(a program named by a variable, an unparseable line, an unknown wrapper option) is
listed in ``hidden``. Plain Python over strings: the approval rules and the replay
evaluator both read lines through here.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import replace

from observations.shell import catalog, inline_code, options
from observations.shell.invocations import Invocation, ShellLine
from observations.shell.syntax import parse_command
from observations.shell.words import Word

MAX_DEPTH = 8  # nested `bash -c "eval ..."` deeper than this is not followed (hidden)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=", re.DOTALL)
_RESERVED = frozenset({"!", "{", "}", "then", "else", "elif", "do", "if", "while", "until", "fi", "done",
                       "esac", "in"})
_NOT_A_PROGRAM = frozenset({"for", "case", "select", "function", "[[", "]]", "(("})


def read_line(text: str) -> ShellLine:
    reader = _Reader()
    chain = reader.line(text, (), 0)
    words: tuple[str, ...] = ()
    program_at = 0
    if chain is not None and len(chain) == 1 and len(chain[0]) == 1:
        command = chain[0][0]
        # Every word's value known: a glob or a variable could expand to an option (`-p x`).
        if (not command.redirects and command.words and not any(w.opaque for w in command.words)
                and not _ASSIGNMENT.match(command.words[0].text) and command.words[0].text not in _RESERVED
                and command.words[0].text not in _NOT_A_PROGRAM):
            words = tuple(w.text for w in command.words)
            program_at = reader.innermost
    return ShellLine(text, tuple(reader.invocations), tuple(dict.fromkeys(reader.hidden)), words, program_at)


class _Reader:
    def __init__(self) -> None:
        self.invocations: list[Invocation] = []
        self.hidden: list[str] = []
        self.innermost = 0  # word index of the last program resolved at the top level

    def line(self, text: str, via: tuple[str, ...], depth: int):
        if depth > MAX_DEPTH:
            self.hidden.append("commands nested too deeply to follow")
            return None
        chain = parse_command(text)
        if chain is None:
            self.hidden.append("text that does not parse as shell (unbalanced quotes, `<(...)`)")
            return None
        for pipeline in chain:
            for command in pipeline:
                for word in [*command.words, *(r.target for r in command.redirects)]:
                    for body in word.commands:
                        self.line(body, (*via, "$(...)"), depth + 1)
                    if word.hidden:
                        self.hidden.append(f"a command inside `{word.text}`")
                self.command(command.words, via, depth)
        return chain

    def command(self, words: list[Word], via: tuple[str, ...], depth: int) -> None:
        i = 0
        while i < len(words) and not words[i].opaque:
            text = words[i].text
            if text in _NOT_A_PROGRAM:
                return
            if text in _RESERVED or _ASSIGNMENT.match(text):
                i += 1
                continue
            break
        self.resolve(words[i:], via, depth, offset=i if depth == 0 else None)

    def add(self, words: list[Word], via: tuple[str, ...], *, runs_code: bool = False,
            wrapper: bool = False) -> None:
        self.invocations.append(Invocation(tuple(w.text for w in words), via, runs_code, wrapper))

    def resolve(self, words: list[Word], via: tuple[str, ...], depth: int, *,
                offset: int | None = None) -> None:
        """Follow one simple command (its words from the program on) to what it runs.

        ``offset``: where ``words`` start in the line's only command, while following it
        through wrappers (None elsewhere); the last one is where its program starts.
        """
        if not words:
            return
        if offset is not None:
            self.innermost = offset
        if words[0].opaque:
            self.hidden.append(f"a program named by an expansion (`{words[0].text}`)")
            return
        if depth > MAX_DEPTH:
            self.hidden.append("commands nested too deeply to follow")
            return
        name = posixpath.basename(words[0].text)
        texts = [w.text for w in words[1:]]
        for matches, follow in _PROGRAMS:
            if matches(name, texts):
                follow(self, name, words, via, depth, offset)
                return
        self.add(words, via, runs_code=name in catalog.ALWAYS_RUN_CODE)

    def _eval(self, name: str, words: list[Word], via: tuple[str, ...], depth: int, offset: int | None) -> None:
        self.add(words, via, runs_code=True)
        if any(w.opaque for w in words[1:]):
            self.hidden.append("`eval` of an expansion")
        else:
            self.line(" ".join(w.text for w in words[1:]), (*via, "eval"), depth + 1)

    def _joined(self, name: str, words: list[Word], via: tuple[str, ...], depth: int, offset: int | None) -> None:
        """`watch`-like programs run their arguments joined into one shell line."""
        args = words[1:]
        self.add(words, via, runs_code=True)
        start = options.skip_options(args, catalog.WATCH_OPTIONS)
        if start is None:
            self.hidden.append(f"an option of `{name}` the hub does not know")
        elif args[start:]:
            self.line(" ".join(w.text for w in args[start:]), (*via, name), depth + 1)

    def _runner(self, name: str, words: list[Word], via: tuple[str, ...], depth: int, offset: int | None) -> None:
        """`npx x`, `uv run x`, `poetry run x`: a subcommand that runs the command after it."""
        args, sub = words[1:], words[1].text
        self.add(words, via, runs_code=True, wrapper=True)
        inner = args[1:]
        start = options.skip_options(inner, catalog.Options(flags=None))
        if start is None:
            self.hidden.append(f"an option of `{name} {sub}` the hub does not know")
        elif name not in ("pnpm", "yarn") or sub == "exec":
            self.resolve(inner[start:], (*via, f"{name} {sub}"), depth + 1)

    # ------------------------------------------------------------------ programs

    def _wrapper(self, name: str, words: list[Word], via: tuple[str, ...], depth: int,
                 offset: int | None) -> None:
        spec = catalog.WRAPPERS[name]
        args = words[1:]
        # xargs adds arguments from its input: what its command finally runs is unseen.
        self.add(words, via, wrapper=True, runs_code=name == "xargs")
        mine = len(self.invocations) - 1
        leading = [w.text for w in args[: next((k for k, w in enumerate(args) if not w.text.startswith("-")),
                                               len(args))]]
        if name == "command" and any(t in ("-v", "-V", "-pv", "-vp") for t in leading):
            return  # `command -v x` looks x up; it runs nothing
        i = operands = 0
        while i < len(args):
            text = args[i].text
            if args[i].opaque:
                self.hidden.append(f"an expansion among the options of `{name}`")
                return
            key = options.option_name(text)
            if key in spec.command_option:  # `flock file -c 'cmd'`, `su -c 'cmd' user`
                value = text.split("=", 1)[1] if "=" in text and text.startswith("--") else (
                    args[i + 1].text if i + 1 < len(args) else "")
                self.invocations[mine] = replace(self.invocations[mine], runs_code=True)
                self.line(value, (*via, f"{name} {key}"), depth + 1)
                return
            if spec.command_option and operands < spec.operands and not text.startswith("-"):
                operands += 1  # an operand before the command option
                i += 1
                continue
            if text == "--":
                i += 1
                break
            if not text.startswith("-") or text == "-" and "-" not in (spec.options.flags or ()):
                break
            step = options.option_width(args, i, spec.options)
            if step is None:
                self.hidden.append(f"an option of `{name}` the hub does not know (`{text}`)")
                return
            i += step
        while spec.assignments and i < len(args) and _ASSIGNMENT.match(args[i].text) and not args[i].opaque:
            i += 1
        i += spec.operands - operands
        self.resolve(args[i:], (*via, name), depth + 1, offset=None if offset is None else offset + 1 + i)

    def _shell(self, name: str, words: list[Word], via: tuple[str, ...], depth: int) -> None:
        args = words[1:]
        i, command_string, reads_stdin = 0, None, False
        while i < len(args):
            text = args[i].text
            if args[i].opaque and command_string is None:
                self.hidden.append(f"an expansion among the options of `{name}`")
                self.add(words, via, runs_code=True)
                return
            if text in ("--", "-"):
                i += 1
                break
            if not text.startswith(("-", "+")) or len(text) == 1:
                break
            if text.startswith("--") or text[1:] in ("o", "O"):
                step = options.option_width(args, i, catalog.SHELL_OPTIONS)
                i += step or 1
                continue
            letters = text[1:]
            if "c" in letters:
                command_string = args[i + 1] if i + 1 < len(args) else None
                i += 2
                break
            reads_stdin = reads_stdin or "s" in letters or "i" in letters
            i += 1
        if command_string is not None:
            self.add(words, via, runs_code=True)
            if command_string.opaque:
                self.hidden.append(f"`{name} -c` of an expansion")
            else:
                self.line(command_string.text, (*via, f"{name} -c"), depth + 1)
            return
        script = args[i:]
        # No script: the program comes from standard input (a pipe, a here-document).
        self.add(words, via, runs_code=reads_stdin or not script)

    def _python(self, words: list[Word], via: tuple[str, ...], depth: int, offset: int | None) -> None:
        args = words[1:]
        i, runs_code = 0, True  # without a script the program comes from standard input
        while i < len(args):
            text = args[i].text
            if text == "-" or not text.startswith("-") or text == "--":
                runs_code = text == "-" or (text == "--" and i + 1 >= len(args))
                break
            if text.startswith("--"):
                i += 2 if text in catalog.PYTHON_OPTIONS.values else 1
                continue
            width = 1
            for k, letter in enumerate(text[1:], start=1):
                attached = text[k + 1:]
                if letter == "c":
                    self.add(words, via, runs_code=True)
                    return
                if letter == "m":
                    module = [Word(attached)] if attached else args[i + 1:i + 2]
                    after = i + (1 if attached else 2)
                    self.add(words, via)
                    self.resolve([*module, *args[after:]], (*via, f"{posixpath.basename(words[0].text)} -m"),
                                 depth + 1, offset=None if offset is None else offset + after)
                    return
                if letter in "WX":
                    value = attached or (args[i + 1].text if i + 1 < len(args) else "")
                    width = 1 if attached else 2
                    # -W action:message:CATEGORY imports the module a dotted category names.
                    if letter == "W" and "." in (value.split(":") + ["", "", ""])[2]:
                        self.add(words, via, runs_code=True)
                        return
                    break
                if letter == "i":
                    self.add(words, via, runs_code=True)  # interactive: reads standard input
                    return
            i += width
        self.add(words, via, runs_code=runs_code)


def _follow_find(reader: _Reader, words: list[Word], via: tuple[str, ...], depth: int) -> None:
    args = words[1:]
    commands: list[tuple[str, list[Word]]] = []
    i = 0
    while i < len(args):
        if args[i].text in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i + 1, len(args)) if args[j].text in (";", "+")), len(args))
            commands.append((args[i].text, args[i + 1:end]))
            i = end
        i += 1
    reader.add(words, via, runs_code=bool(commands))
    for option, command in commands:
        reader.resolve(command, (*via, f"find {option}"), depth + 1)


def _follow_git(reader: _Reader, words: list[Word], via: tuple[str, ...], depth: int) -> None:
    args = words[1:]
    texts = [w.text for w in args]
    i, runs = 0, False
    while i < len(args) and texts[i].startswith("-"):
        key = options.option_name(texts[i])
        if key in catalog.GIT_CODE_GLOBAL:
            runs = True
            i += 1 if "=" in texts[i] or key in ("-p", "--paginate") else 2
            continue
        step = options.option_width(args, i, catalog.GIT_GLOBAL)
        if step is None:
            reader.hidden.append(f"an option of `git` the hub does not know (`{texts[i]}`)")
            break
        i += step
    sub = texts[i] if i < len(texts) else ""
    rest, rest_texts = args[i + 1:], texts[i + 1:]
    runs = runs or sub in catalog.GIT_CODE_SUBCOMMANDS or options.starts_with_option(
        rest_texts, catalog.GIT_CODE_ARGUMENTS)
    runs = runs or (sub in ("clone", "fetch", "pull", "ls-remote", "archive") and "-u" in rest_texts)
    runs = runs or (sub == "grep" and options.starts_with_option(rest_texts, ("-O",)))
    lines = inline_code.git_lines(sub, rest_texts)
    command = rest[1:] if sub == "bisect" and rest_texts[:1] == ["run"] else []
    reader.invocations.append(Invocation(tuple([words[0].text, *texts]), via, runs or bool(lines or command),
                                       key_words=("git", *texts[i:])))
    for text in lines:
        reader.line(text, (*via, f"git {sub}"), depth + 1)
    if command:
        reader.resolve(command, (*via, "git bisect run"), depth + 1)


# --- what a program runs, by its name: the first entry whose test matches decides ---------

def _named(*names: str):
    chosen = frozenset(names)
    return lambda name, texts: name in chosen


def _among(collection):
    return lambda name, texts: name in collection


def _checked(runs_code):
    """A program the hub does not follow into: whether its arguments make it run code."""
    def follow(reader: _Reader, name: str, words: list[Word], via: tuple[str, ...], depth: int,
               offset: int | None) -> None:
        reader.add(words, via, runs_code=runs_code(name, words[1:], [w.text for w in words[1:]]))
    return follow


_PROGRAMS = (
    (_among(catalog.WRAPPERS), _Reader._wrapper),
    (_among(catalog.SHELLS), lambda r, name, words, via, depth, offset: r._shell(name, words, via, depth)),
    (_named("eval"), _Reader._eval),
    (_among(catalog.JOINS_ARGUMENTS), _Reader._joined),
    (lambda name, texts: catalog.PYTHON.match(name) is not None,
     lambda r, name, words, via, depth, offset: r._python(words, via, depth, offset)),
    (_among(catalog.INTERPRETERS),
     _checked(lambda name, args, texts: options.interpreter_runs_code(args, catalog.INTERPRETERS[name]))),
    (_among(catalog.AWKS), _checked(inline_code.awk_code)),
    (_named("sed"), _checked(lambda name, args, texts: options.sed_runs_code(texts))),
    (_named("find"), lambda r, name, words, via, depth, offset: _follow_find(r, words, via, depth)),
    (_named("git"), lambda r, name, words, via, depth, offset: _follow_git(r, words, via, depth)),
    (_named("make", "gmake"), _checked(inline_code.make_code)),
    (_among(catalog.PYTEST), _checked(inline_code.pytest_code)),
    (_named("tar"), _checked(lambda name, args, texts: options.starts_with_option(texts, catalog.TAR_CODE))),
    (_among(catalog.EDITORS), _checked(inline_code.editor_code)),
    (_named("go", "cargo"), _checked(inline_code.build_code)),
    (_named("rsync", "scp", "sftp"), _checked(inline_code.remote_code)),
    (_named("sqlite3", "psql", "mysql"), _checked(inline_code.sql_code)),
    (inline_code.is_runner, _Reader._runner),
    (inline_code.is_pip, _checked(inline_code.subcommand_code)),
    (_named("uv"), _checked(inline_code.uv_code)),
)


def program_words(words: list[Word]) -> list[Word]:
    """A simple command's words from the program it runs on: past reserved words,
    ``NAME=value`` and wrappers with their options (``sudo``, ``timeout 60``, ``env -i``)."""
    reader = _Reader()
    reader.command(list(words), (), 0)
    if reader.hidden or not reader.invocations:
        return []
    return list(words[reader.innermost:])
