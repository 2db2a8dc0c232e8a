"""A small, strict reader of shell command lines: the one parser of the hub.

It splits a command line into a chain of pipelines of simple commands with their
redirections, the way bash would for the common cases agents use: quotes (including
``$'...'``), escapes, line continuations, ``&&``/``||``/``;``/newlines, pipes, subshell
parentheses, redirections and here-documents (each body kept on its redirection). Anything it
cannot interpret exactly (command substitution, globs, brace expansion, variables) is
marked *opaque* rather than guessed; the text of each command substitution is kept, so
a reader can look into it; an unbalanced quote makes the whole line unparseable
(`parse_command` returns None). What the commands *do* (wrappers, programs that run
code from their arguments) is `observations.shell.programs`' business.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from observations.shell.words import (
    Unparseable,
    Word,
    WordBuilder,
    ansi_c_quoted,
    double_quoted,
    expansion,
    heredoc_delimiter,
    read_heredoc_bodies,
)

_REDIRECT_OPS = ("&>>", "<<<", "<<-", ">>", "<<", "&>", ">&", "<&", ">|", "<>", ">", "<")
_CONTROL_OPS = ("&&", "||", "|&", "|", ";;", ";", "&", "(", ")")


@dataclass(frozen=True, slots=True)
class Redirect:
    fd: int | None  # explicit descriptor (the 2 of 2>), None when implicit
    op: str
    target: Word  # a here-document's: its delimiter
    body: str | None = None  # a here-document's text, as written (no expansion done)
    expands: bool = False  # the body is one bash expands ($var, $(...), `...`, \): its delimiter unquoted


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


# A `{` that opens a brace expansion: a comma or `..` before its `}`, within the word.
_BRACE_EXPANSION = re.compile(r"\{[^\s;&|<>(){}]*(?:,|\.\.)[^\s;&|<>()]*\}")


_DIGITS = re.compile(r"[0-9]+")  # the fd of `2>`: ASCII digits only (`²` is a digit to str.isdigit)


def parse_command(text: str) -> list[Pipeline] | None:
    """The chain of pipelines in ``text``, or None when it is not well-formed shell."""
    try:
        tokenizer = _Tokenizer(text)
        return _Chain().build(tokenizer.run(), zip(tokenizer.bodies, tokenizer.expanding, strict=False))
    except Unparseable:
        return None


class _Chain:
    """Pipelines of simple commands, built from the tokens in order."""

    def __init__(self) -> None:
        self.chain: list[Pipeline] = []
        self.pipeline: Pipeline = []
        self.command = SimpleCommand()

    def build(self, tokens: list[tuple[str, object, int | None]],
              bodies: Iterator[tuple[str, bool]]) -> list[Pipeline]:
        """``bodies``: the here-documents' texts (and whether bash expands each), in the
        order of their redirections."""
        pending_redirect: tuple[int | None, str] | None = None
        for kind, value, fd in tokens:
            if pending_redirect is not None:
                if kind != "word":
                    raise Unparseable  # a redirection needs its target
                fd_, op = pending_redirect
                body, expands = next(bodies, (None, False)) if op in ("<<", "<<-") else (None, False)
                self.command.redirects.append(Redirect(fd_, op, value, body, expands))
                pending_redirect = None
            elif kind == "word":
                self.command.words.append(value)
            elif kind == "redirect":
                pending_redirect = (fd, value)
            elif value in ("|", "|&"):
                self._end_command()
            else:
                self._end_pipeline()
        if pending_redirect is not None:
            raise Unparseable
        self._end_pipeline()
        return self.chain

    def _end_command(self) -> None:
        if self.command.words or self.command.redirects:
            self.pipeline.append(self.command)
        self.command = SimpleCommand()

    def _end_pipeline(self) -> None:
        self._end_command()
        if self.pipeline:
            self.chain.append(self.pipeline)
        self.pipeline = []


def split_words(text: str) -> list[str] | None:
    """The words of ``text`` when it is one simple command with no redirection, quotes and
    escapes removed (an expansion's text left as written), as ``shlex.split`` would give
    them; None for anything else (several commands, a pipe, an unbalanced quote)."""
    chain = parse_command(text)
    if chain is None or len(chain) != 1 or len(chain[0]) != 1 or chain[0][0].redirects:
        return None
    return chain[0][0].argv


class _Tokenizer:
    """One pass over a line. Each ``_…`` step reads what starts at ``i`` if it is its
    kind of text and returns where reading goes on, or None to leave it to the next
    step; the order of the steps is bash's order of precedence."""

    def __init__(self, text: str) -> None:
        self.text, self.n = text, len(text)
        self.tokens: list[tuple[str, object, int | None]] = []
        self.heredocs: list[tuple[str, bool]] = []  # (delimiter, strip leading tabs) awaiting a newline
        self.bodies: list[str] = []  # the here-documents' texts, in order
        self.expanding: list[bool] = []  # whether bash expands each (its delimiter unquoted)
        self.word = WordBuilder()
        self.steps = (self._escape, self._quote, self._expansion, self._comment, self._blank, self._redirect,
                      self._control)

    def run(self) -> list[tuple[str, object, int | None]]:
        i = 0
        while i < self.n:
            i = self._step(i)
        self._flush()
        if self.heredocs:
            # A here-document opened on the last line has no body: the text was cut short.
            raise Unparseable
        return self.tokens

    def _step(self, i: int) -> int:
        for step in self.steps:
            after = step(i)
            if after is not None:
                return after
        self.word.buf.append(self.text[i])
        self.word.in_word = True
        return i + 1

    def _flush(self) -> None:
        taken = self.word.take()
        if taken is not None:
            self.tokens.append(("word", taken, None))

    def _escape(self, i: int) -> int | None:
        text, word = self.text, self.word
        if text[i] != "\\":
            return None
        if i + 1 < self.n and text[i + 1] == "\n":
            return i + 2  # line continuation
        if i + 1 < self.n:
            word.buf.append(text[i + 1])
            word.in_word = True
        return i + 2

    def _quote(self, i: int) -> int | None:
        text, word = self.text, self.word
        c = text[i]
        if c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise Unparseable
            word.buf.append(text[i + 1 : end])
            word.in_word = True
            return end + 1
        if text.startswith("$'", i):
            word.in_word = True
            return ansi_c_quoted(text, i + 2, word.buf)
        if c == '"' or text.startswith('$"', i):
            word.in_word = True
            return double_quoted(text, i + (2 if c == "$" else 1), word)
        return None

    def _expansion(self, i: int) -> int | None:
        text, word = self.text, self.word
        c = text[i]
        if c in "$`":
            return expansion(text, i, word)
        # `{a,b}`, `x{1..3}`: bash expands these to words nobody wrote. (`{}` and a `{`
        # standing alone, which groups commands, are plain words.)
        if c in "*?[" or (c == "~" and not word.in_word) or (c == "{" and _BRACE_EXPANSION.match(text, i)):
            word.buf.append(c)
            word.opaque = word.in_word = True
            return i + 1
        return None

    def _comment(self, i: int) -> int | None:
        if self.text[i] != "#" or self.word.in_word:
            return None
        end = self.text.find("\n", i)
        return self.n if end < 0 else end

    def _blank(self, i: int) -> int | None:
        c = self.text[i]
        if c in " \t\r":
            self._flush()
            return i + 1
        if c != "\n":
            return None
        self._flush()
        self.tokens.append(("op", "\n", None))
        i += 1
        if self.heredocs:
            i, bodies = read_heredoc_bodies(self.text, i, self.heredocs)
            self.bodies += bodies
            self.heredocs = []
        return i

    def _redirect(self, i: int) -> int | None:
        text, word = self.text, self.word
        if not (text[i] in "<>" or text.startswith(("&>", "&>>"), i)):
            return None
        fd = None
        if word.in_word and word.buf and _DIGITS.fullmatch("".join(word.buf)) and not word.opaque:
            fd = int("".join(word.buf))
            word.take()
        self._flush()
        op = next(o for o in _REDIRECT_OPS if text.startswith(o, i))
        i += len(op)
        self.tokens.append(("redirect", op, fd))
        if op in ("<<", "<<-"):
            i, delimiter, quoted = heredoc_delimiter(text, i)
            self.heredocs.append((delimiter, op == "<<-"))
            self.expanding.append(not quoted)
            self.tokens.append(("word", Word(delimiter), None))
        return i

    def _control(self, i: int) -> int | None:
        if self.text[i] not in "|;&()":
            return None
        self._flush()
        op = next(o for o in _CONTROL_OPS if self.text.startswith(o, i))
        self.tokens.append(("op", op, None))
        return i + len(op)


