"""What a shell line runs, as read_line says it: each program started (an Invocation, with
the wrappers and shells it was seen through) and what could not be seen (ShellLine)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Invocation:
    """One program the line runs."""

    argv: tuple[str, ...]  # as written, quotes and escapes removed
    via: tuple[str, ...] = ()  # what started it, outermost first: "timeout", "bash -c", "$(...)"
    runs_code: bool = False  # runs code or a command given in its arguments
    wrapper: bool = False  # only starts the command after its options
    # The words rules compare, when not simply the program's base name and its arguments
    # (git's are without its global options: `git -C x push` is a `git push`).
    key_words: tuple[str, ...] = ()

    @property
    def program(self) -> str:
        return posixpath.basename(self.argv[0]) if self.argv else ""

    @property
    def key(self) -> tuple[str, ...]:
        """The words rules compare: the program by its base name, then its arguments."""
        return self.key_words or (self.program, *self.argv[1:])

    def describe(self) -> str:
        via = "".join(f"{step} → " for step in self.via)
        note = " (runs code from its arguments)" if self.runs_code else ""
        return f"{via}{' '.join(self.argv)}{note}"


@dataclass(frozen=True, slots=True)
class ShellLine:
    text: str
    invocations: tuple[Invocation, ...]  # everything the line can be seen to run
    hidden: tuple[str, ...]  # why parts of the line cannot be seen into
    # The words of a single command standing alone, every value known; else ().
    words: tuple[str, ...]
    program_at: int  # in ``words``: where the innermost program starts (past any wrappers)

    @property
    def opaque(self) -> bool:
        return bool(self.hidden)

    @property
    def runs_code(self) -> bool:
        return any(i.runs_code for i in self.invocations)

    @property
    def single(self) -> bool:
        """One command alone: no list, pipe, group, redirection, assignment, substitution,
        variable or glob."""
        return bool(self.words)

    @property
    def plain(self) -> bool:
        """A single command, fully visible, with no wrapper and nothing run from its arguments."""
        return (self.single and not self.hidden and not self.runs_code
                and not any(i.wrapper for i in self.invocations))
