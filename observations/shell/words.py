"""A shell word (``Word``) and the parts of one that bash reads specially: quotes (double,
ANSI-C), expansions (`$(...)`, `${...}`, backquotes), and here-documents' delimiters and
bodies, each read from a position in the line to where it ends."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Word:
    text: str  # quotes and escapes removed
    opaque: bool = False  # holds a substitution, variable, glob or braces: its value is unknown
    # The text of each command substitution (``$(...)``, backquotes) in the word: commands
    # that run before the word's own command does.
    commands: tuple[str, ...] = ()
    # An expansion runs commands whose text could not be cut out (``${x:-$(cmd)}``).
    hidden: bool = False


class Unparseable(Exception):
    pass


def double_quoted(text: str, i: int, word: WordBuilder) -> int:
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return i + 1
        if c == "\\" and i + 1 < n and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                word.buf.append(text[i + 1])
            i += 2
            continue
        if c == "$" or c == "`":
            i = expansion(text, i, word)
            continue
        word.buf.append(c)
        i += 1
    raise Unparseable


_ANSI_C_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
                   "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def ansi_c_quoted(text: str, i: int, buf: list[str]) -> int:
    """``$'...'`` as bash decodes it (``$'\\x72m'`` is ``rm``); returns the index after it."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == "'":
            return i + 1
        if c != "\\" or i + 1 >= n:
            buf.append(c)
            i += 1
            continue
        e = text[i + 1]
        if e in _ANSI_C_ESCAPES:
            buf.append(_ANSI_C_ESCAPES[e])
            i += 2
        elif e in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[e]
            j = i + 2
            while j < min(n, i + 2 + width) and text[j] in "0123456789abcdefABCDEF":
                j += 1
            if j == i + 2:
                buf.append("\\" + e)
            else:
                code = int(text[i + 2 : j], 16)
                buf.append(chr(code) if code < 0x110000 else "\ufffd")
            i = j
        elif e in "01234567":
            j = i + 1
            while j < min(n, i + 4) and text[j] in "01234567":
                j += 1
            buf.append(chr(int(text[i + 1 : j], 8) & 0xFF))
            i = j
        elif e == "c" and i + 2 < n:
            buf.append(chr(ord(text[i + 2]) & 0x1F))
            i += 3
        else:
            buf.append("\\" + e)
            i += 2
    raise Unparseable


def expansion(text: str, i: int, word: WordBuilder) -> int:
    """Step over ``$name``, ``${...}``, ``$(...)``, ``$((...))`` or a backquoted command
    at ``i``, recording it in ``word``; returns the index after it."""
    start = i
    body: str | None = None
    if text[i] == "`":
        i, body = _backquoted(text, i)
    elif text.startswith("$(", i):
        # `$((`: arithmetic, unless bash reads it as a subshell in a substitution
        # (`$((rm x) )`): its text is kept as commands too, so a reader errs on the side
        # of "it runs".
        i = _matching_paren(text, i + 1)
        body = text[start + 2 : i - 1]
    elif text.startswith("${", i):
        i = _braced(text, i + 1)
    else:
        i = _parameter(text, i)
    word.expansion(text[start:i], body)
    return i


def _backquoted(text: str, i: int) -> tuple[int, str]:
    """The end of the backquoted command at ``i``, and its text unescaped."""
    n, j = len(text), i + 1
    while j < n and text[j] != "`":
        j += 2 if text[j] == "\\" else 1
    if j >= n:
        raise Unparseable
    return j + 1, text[i + 1 : j].replace("\\`", "`").replace("\\\\", "\\").replace("\\$", "$")


def _braced(text: str, i: int) -> int:
    """The index after the ``}`` closing the ``${`` whose brace is at ``i``."""
    depth, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif ch == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise Unparseable
            i = end
        i += 1
    raise Unparseable


def _parameter(text: str, start: int) -> int:
    """The index after ``$name``, or a special parameter (``$?``, ``$1``), at ``start``."""
    n, i = len(text), start + 1
    while i < n and (text[i].isalnum() or text[i] == "_"):
        i += 1
    if i == start + 1 and i < n and text[i] in "?#@*!$-0123456789":
        i += 1
    return i


def _matching_paren(text: str, i: int) -> int:
    """The index after the parenthesis that closes the one at ``i``, skipping quotes,
    escapes and nested substitutions the way bash reads a ``$(...)``."""
    n = len(text)
    depth = 0
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise Unparseable
            i = end + 1
            continue
        if ch == '"':
            i = double_quoted(text, i + 1, WordBuilder())
            continue
        if ch == "`":
            end = text.find("`", i + 1)
            if end < 0:
                raise Unparseable
            i = end + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise Unparseable


def heredoc_delimiter(text: str, i: int) -> tuple[int, str, bool]:
    """Where the delimiter word ends, the delimiter, and whether any of it was quoted
    (then bash expands nothing in the body)."""
    n = len(text)
    while i < n and text[i] in " \t":
        i += 1
    out: list[str] = []
    quoted = False
    while i < n and text[i] not in " \t\n;&|<>()":
        c = text[i]
        if c in "'\"":
            quoted = True
            end = text.find(c, i + 1)
            if end < 0:
                raise Unparseable
            out.append(text[i + 1 : end])
            i = end + 1
        elif c == "\\" and i + 1 < n:
            quoted = True
            out.append(text[i + 1])
            i += 2
        else:
            out.append(c)
            i += 1
    if not out:
        raise Unparseable
    return i, "".join(out), quoted


def read_heredoc_bodies(text: str, i: int, heredocs: list[tuple[str, bool]]) -> tuple[int, list[str]]:
    """The bodies of ``heredocs`` (in order) from ``i``, the start of the line after the
    one that opened them, and where reading goes on after them."""
    n = len(text)
    bodies: list[str] = []
    for delimiter, strip_tabs in heredocs:
        lines: list[str] = []
        while True:
            if i >= n:
                break  # bash warns and ends the body at end of input; accept the same.
            end = text.find("\n", i)
            line = text[i : end if end >= 0 else n]
            i = end + 1 if end >= 0 else n
            if strip_tabs:
                line = line.lstrip("\t")
            if line == delimiter:
                break
            lines.append(line + "\n")
        bodies.append("".join(lines))
    return i, bodies


class WordBuilder:
    """The word being read: its text, and what is known about its value."""

    __slots__ = ("buf", "commands", "hidden", "in_word", "opaque")

    def __init__(self) -> None:
        self.buf: list[str] = []
        self.opaque = self.hidden = self.in_word = False
        self.commands: list[str] = []

    def take(self) -> Word | None:
        word = None
        if self.in_word:
            word = Word("".join(self.buf), self.opaque, tuple(self.commands), self.hidden)
        self.__init__()
        return word

    def expansion(self, raw: str, body: str | None) -> None:
        """A ``$...`` or backquoted part: its value is unknown; a command substitution's
        text is kept, and one whose text cannot be cut out marks the word hidden."""
        self.buf.append(raw)
        self.opaque = self.in_word = True
        if body is not None:
            self.commands.append(body)
        elif raw.startswith("${") and ("$(" in raw or "`" in raw or "<(" in raw or ">(" in raw):
            self.hidden = True
