"""A file's unified diff as lines people read: each numbered on its side, marked added,
removed or context, its code highlighted for the file's language (Pygments). The code of
a file's lines is highlighted in one pass and split back into lines (Pygments closes its
spans at every line end), so a 200-file change renders in one pass per file. Plain
Python: the view marks the result safe; everything in it is escaped here.
"""

from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_for_filename
from pygments.lexers.special import TextLexer
from pygments.util import ClassNotFound

HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
KINDS = {"+": "add", "-": "del", " ": "ctx"}
_FORMATTER = HtmlFormatter(nowrap=True)


@dataclass(frozen=True, slots=True)
class Line:
    kind: str  # "hunk", "add", "del", "ctx" or "note" (git's "\ No newline at end of file")
    old: int | None
    new: int | None
    html: str


@dataclass(frozen=True, slots=True)
class FileDiff:
    lines: tuple[Line, ...]
    binary: bool = False
    cut: int = 0  # lines of the diff left out past the limit


def diff_lines(path: str, patch: str, *, max_lines: int) -> FileDiff:
    """``patch`` (one file's ``diff --git`` text) as numbered, highlighted lines; a file
    with NUL bytes is binary and has none."""
    if "\x00" in patch:
        return FileDiff(lines=(), binary=True)
    body = patch.split("\n")
    start = next((n for n, text in enumerate(body) if text.startswith("@@")), len(body))
    body = body[start:]
    if body and body[-1] == "":
        body.pop()
    cut = max(0, len(body) - max_lines)
    body = body[:max_lines]
    code = [text[1:] for text in body if text[:1] in KINDS]
    highlighted = _highlighted(path, code)
    lines, old, new, code_index = [], 0, 0, 0
    for text in body:
        if match := HUNK.match(text):
            old, new = int(match[1]), int(match[2])
            lines.append(Line("hunk", None, None, html.escape(text)))
        elif (kind := KINDS.get(text[:1])) is not None:
            lines.append(Line(kind, old if kind != "add" else None, new if kind != "del" else None,
                              highlighted[code_index]))
            code_index += 1
            old += kind != "add"
            new += kind != "del"
        else:
            lines.append(Line("note", None, None, html.escape(text)))
    return FileDiff(lines=tuple(lines), cut=cut)


def highlighted_file(path: str, text: str) -> str:
    """A whole file as a numbered, highlighted table (the room's code browser)."""
    code = text.split("\n")
    if code and code[-1] == "":
        code.pop()
    marked = _highlighted(path, code)
    rows = "".join(f'<tr><td class="no">{n}</td><td class="diff-code">{line}</td></tr>'
                   for n, line in enumerate(marked, start=1))
    return f"<table>{rows}</table>"


def table_html(shown: FileDiff) -> str:
    """The diff's rows as one table: written here rather than by a template loop, which
    costs ~30 µs a row (a 200-file change is ten thousand rows)."""
    rows = "".join(
        f'<tr class="{line.kind}"><td class="no">{"" if line.old is None else line.old}</td>'
        f'<td class="no">{"" if line.new is None else line.new}</td><td class="diff-code">{line.html}</td></tr>'
        for line in shown.lines)
    return f"<table>{rows}</table>"


def _highlighted(path: str, code: list[str]) -> list[str]:
    if not code:
        return []
    marked = _marked(_lexer(path.rsplit("/", 1)[-1]), "\n".join(code) + "\n")
    if len(marked) < len(code):  # not split as it came: shown plain rather than misplaced
        return [html.escape(text) for text in code]
    return list(marked[:len(code)])


@functools.lru_cache(maxsize=2048)
def _marked(lexer: Lexer, code: str) -> tuple[str, ...]:
    """Highlighting is most of a page's time (a Python file's lexer, ~0.1 ms a line): a
    file's code is highlighted once per process, and a live page sent anew when its
    branch moved highlights only the files that changed."""
    return tuple(highlight(code, lexer, _FORMATTER).split("\n"))


@functools.lru_cache(maxsize=512)
def _lexer(name: str) -> Lexer:
    try:
        return get_lexer_for_filename(name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


def style_sheet(scope: str) -> str:
    """The CSS of the highlighting's classes, within ``scope``."""
    return _FORMATTER.get_style_defs(scope)
