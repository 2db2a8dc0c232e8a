"""A small, strict reader of the shell commands agents write.

It splits a command line into a chain of pipelines of simple commands with their
redirections, the way bash would for the common cases agents use: quotes, escapes,
line continuations, ``&&``/``||``/``;``/newlines, pipes, redirections and here-documents
(whose bodies are skipped). Anything it cannot interpret exactly — command substitution,
globs, variables — is marked *opaque* rather than guessed, and an unbalanced quote makes
the whole line unparseable (`parse_command` returns None).
"""

from __future__ import annotations

from dataclasses import dataclass, field

_REDIRECT_OPS = ("&>>", "<<<", "<<-", ">>", "<<", "&>", ">&", "<&", ">|", "<>", ">", "<")
_CONTROL_OPS = ("&&", "||", "|&", "|", ";;", ";", "&", "(", ")")


@dataclass(frozen=True, slots=True)
class Word:
    text: str  # quotes and escapes removed
    opaque: bool = False  # holds a substitution, variable or glob: its value is unknown


@dataclass(frozen=True, slots=True)
class Redirect:
    fd: int | None  # explicit descriptor (the 2 of 2>), None when implicit
    op: str
    target: Word


@dataclass(slots=True)
class SimpleCommand:
    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)

    @property
    def argv(self) -> list[str]:
        return [w.text for w in self.words]

    def stdout_target(self) -> Redirect | None:
        """The redirection that sends this command's standard output to a file, if any."""
        found = None
        for r in self.redirects:
            to_file = r.op in (">", ">>", ">|", "&>", "&>>") or (
                r.op == ">&" and not r.target.text.isdigit()
            )
            if to_file and r.fd in (None, 1):
                found = r
        return found

    def stdin_redirected(self) -> bool:
        return any(
            r.op in ("<", "<<", "<<-", "<<<", "<>") and r.fd in (None, 0) for r in self.redirects
        )


Pipeline = list[SimpleCommand]


class _Unparseable(Exception):
    pass


def parse_command(text: str) -> list[Pipeline] | None:
    """The chain of pipelines in ``text``, or None when it is not well-formed shell."""
    try:
        tokens = _tokenize(text)
    except _Unparseable:
        return None
    chain: list[Pipeline] = []
    pipeline: Pipeline = []
    command = SimpleCommand()
    pending_redirect: tuple[int | None, str] | None = None

    def end_command() -> None:
        nonlocal command
        if command.words or command.redirects:
            pipeline.append(command)
        command = SimpleCommand()

    def end_pipeline() -> None:
        nonlocal pipeline
        end_command()
        if pipeline:
            chain.append(pipeline)
        pipeline = []

    for kind, value, fd in tokens:
        if pending_redirect is not None:
            if kind != "word":
                return None
            command.redirects.append(Redirect(pending_redirect[0], pending_redirect[1], value))
            pending_redirect = None
            continue
        if kind == "word":
            command.words.append(value)
        elif kind == "redirect":
            pending_redirect = (fd, value)
        elif value in ("|", "|&"):
            end_command()
        else:
            end_pipeline()
    if pending_redirect is not None:
        return None
    end_pipeline()
    return chain


def _tokenize(text: str) -> list[tuple[str, object, int | None]]:
    """Tokens as (kind, value, fd): ("word", Word, None), ("op", str, None),
    ("redirect", op, fd)."""
    tokens: list[tuple[str, object, int | None]] = []
    heredocs: list[tuple[str, bool]] = []  # (delimiter, strip leading tabs) awaiting a newline
    i, n = 0, len(text)
    buf: list[str] = []
    opaque = False
    in_word = False

    def flush() -> None:
        nonlocal buf, opaque, in_word
        if in_word:
            tokens.append(("word", Word("".join(buf), opaque), None))
        buf, opaque, in_word = [], False, False

    while i < n:
        c = text[i]
        if c == "\\":
            if i + 1 < n and text[i + 1] == "\n":
                i += 2  # line continuation
                continue
            if i + 1 < n:
                buf.append(text[i + 1])
                in_word = True
            i += 2
            continue
        if c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise _Unparseable
            buf.append(text[i + 1 : end])
            in_word, i = True, end + 1
            continue
        if c == '"':
            i, opaque_part = _double_quoted(text, i + 1, buf)
            opaque = opaque or opaque_part
            in_word = True
            continue
        if c == "$" or c == "`":
            i = _skip_expansion(text, i, buf)
            opaque = in_word = True
            continue
        if c in "*?[" or (c == "~" and not in_word):
            buf.append(c)
            opaque = in_word = True
            i += 1
            continue
        if c == "#" and not in_word:
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c in " \t\r":
            flush()
            i += 1
            continue
        if c == "\n":
            flush()
            tokens.append(("op", "\n", None))
            i += 1
            if heredocs:
                i = _skip_heredoc_bodies(text, i, heredocs)
                heredocs = []
            continue
        if c in "<>" or (c == "&" and text.startswith(("&>", "&>>"), i)):
            fd = None
            if in_word and buf and "".join(buf).isdigit() and not opaque:
                fd = int("".join(buf))
                buf, in_word = [], False
            flush()
            op = next(o for o in _REDIRECT_OPS if text.startswith(o, i))
            i += len(op)
            tokens.append(("redirect", op, fd))
            if op in ("<<", "<<-"):
                i, delimiter = _heredoc_delimiter(text, i)
                heredocs.append((delimiter, op == "<<-"))
                tokens.append(("word", Word(delimiter), None))
            continue
        if c in "|;&()":
            flush()
            op = next(o for o in _CONTROL_OPS if text.startswith(o, i))
            tokens.append(("op", op, None))
            i += len(op)
            continue
        buf.append(c)
        in_word = True
        i += 1
    flush()
    if heredocs:
        # A here-document opened on the last line has no body: the text was cut short.
        raise _Unparseable
    return tokens


def _double_quoted(text: str, i: int, buf: list[str]) -> tuple[int, bool]:
    opaque = False
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return i + 1, opaque
        if c == "\\" and i + 1 < n and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                buf.append(text[i + 1])
            i += 2
            continue
        if c == "$" or c == "`":
            i = _skip_expansion(text, i, buf)
            opaque = True
            continue
        buf.append(c)
        i += 1
    raise _Unparseable


def _skip_expansion(text: str, i: int, buf: list[str]) -> int:
    """Step over ``$name``, ``${...}``, ``$(...)``, ``$((...))`` or a backquoted command,
    copying its raw text into ``buf`` (its value is unknown anyway)."""
    n = len(text)
    start = i
    if text[i] == "`":
        end = text.find("`", i + 1)
        if end < 0:
            raise _Unparseable
        i = end + 1
    elif i + 1 < n and text[i + 1] in "({":
        close = ")" if text[i + 1] == "(" else "}"
        depth, i = 0, i + 1
        while i < n:
            ch = text[i]
            if ch == text[start + 1]:
                depth += 1
            elif ch == close:
                depth -= 1
                if depth == 0:
                    i += 1
                    break
            elif ch == "'":
                end = text.find("'", i + 1)
                if end < 0:
                    raise _Unparseable
                i = end
            i += 1
        else:
            raise _Unparseable
    else:
        i += 1
        while i < n and (text[i].isalnum() or text[i] == "_"):
            i += 1
        if i == start + 1 and i < n and text[i] in "?#@*!$-0123456789":
            i += 1
    buf.append(text[start:i])
    return i


def _heredoc_delimiter(text: str, i: int) -> tuple[int, str]:
    n = len(text)
    while i < n and text[i] in " \t":
        i += 1
    out: list[str] = []
    while i < n and text[i] not in " \t\n;&|<>()":
        c = text[i]
        if c in "'\"":
            end = text.find(c, i + 1)
            if end < 0:
                raise _Unparseable
            out.append(text[i + 1 : end])
            i = end + 1
        elif c == "\\" and i + 1 < n:
            out.append(text[i + 1])
            i += 2
        else:
            out.append(c)
            i += 1
    if not out:
        raise _Unparseable
    return i, "".join(out)


def _skip_heredoc_bodies(text: str, i: int, heredocs: list[tuple[str, bool]]) -> int:
    n = len(text)
    for delimiter, strip_tabs in heredocs:
        while True:
            if i >= n:
                # bash warns and ends the body at end of input; accept the same.
                return n
            end = text.find("\n", i)
            line = text[i : end if end >= 0 else n]
            i = end + 1 if end >= 0 else n
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
    return i
