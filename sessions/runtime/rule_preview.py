"""What a room's approval rules would do with one sample call, and why: the preview on
the room's settings panel. Plain Python over the same `decide` the loop uses."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from agents.tools.registry import SHELL_TOOLS
from sessions.runtime.approvals import (
    _STRICTNESS,
    ASK,
    MATCH,
    MAYBE,
    PATH_TOOLS,
    READ_ONLY_TOOLS,
    Rule,
    decide,
)


@dataclass(frozen=True, slots=True)
class Preview:
    decision: str  # allow / ask / deny
    matched: tuple[Rule, ...]
    why: str


def preview(tool: str, sample: str, rules: list[Rule]) -> Preview:
    """``sample`` is a command line for shell, a path for the file tools, unused otherwise."""
    arguments: dict[str, str] = {}
    if tool in SHELL_TOOLS:
        arguments = {"command": sample.strip()}
    elif tool in PATH_TOOLS:
        path = posixpath.normpath(sample.strip() or ".")
        if path == ".." or path.startswith("../") or path.startswith("/"):
            return Preview("deny", (), "the path leaves the worktree: the tool refuses it whatever the rules say")
        arguments = {"path": path}
    decision = decide(tool, arguments, rules)
    levels = [(rule, rule.match(tool, arguments)) for rule in rules]
    matched = tuple(rule for rule, level in levels if level == MATCH)
    maybe = tuple(rule for rule, level in levels if level == MAYBE)
    if not matched and not maybe:
        why = ("no rule matches, and read-only tools run without asking" if tool in READ_ONLY_TOOLS
               else "no rule matches, so a person is asked (rooms are read-only by default)")
    elif maybe and decision == ASK and not any(_STRICTNESS[rule.decision] >= _STRICTNESS[ASK] for rule in matched):
        why = (f"the line could run what {maybe[0].decision} {maybe[0].describe()} names (a part it cannot "
               "see into, code in its arguments, or files of the worktree the agent may have written), so a "
               "person is asked")
    elif len({rule.decision for rule in matched}) > 1:
        strictest = max(matched, key=lambda rule: _STRICTNESS[rule.decision])
        why = f"several rules match; the strictest wins: {strictest.decision} {strictest.describe()}"
    else:
        why = f"matches {matched[0].decision} {matched[0].describe()}"
    return Preview(decision, matched + maybe, why)
