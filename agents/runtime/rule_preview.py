"""What a room's approval rules would do with one sample call, and why: the preview on
the room's settings panel. Plain Python over the same `decide` the loop uses."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from agents.runtime.approvals import _STRICTNESS, PATH_TOOLS, READ_ONLY_TOOLS, Rule, decide


@dataclass(frozen=True, slots=True)
class Preview:
    decision: str  # allow / ask / deny
    matched: tuple[Rule, ...]
    why: str


def preview(tool: str, sample: str, rules: list[Rule]) -> Preview:
    """``sample`` is a command line for shell, a path for the file tools, unused otherwise."""
    arguments: dict[str, str] = {}
    if tool == "shell":
        arguments = {"command": sample.strip()}
    elif tool in PATH_TOOLS:
        path = posixpath.normpath(sample.strip() or ".")
        if path == ".." or path.startswith("../") or path.startswith("/"):
            return Preview("deny", (), "the path leaves the worktree: the tool refuses it whatever the rules say")
        arguments = {"path": path}
    decision = decide(tool, arguments, rules)
    matched = tuple(rule for rule in rules if rule.matches(tool, arguments))
    if not matched:
        why = ("no rule matches, and read-only tools run without asking" if tool in READ_ONLY_TOOLS
               else "no rule matches, so a person is asked (rooms are read-only by default)")
    elif len({rule.decision for rule in matched}) > 1:
        strictest = max(matched, key=lambda rule: _STRICTNESS[rule.decision])
        why = f"several rules match; the strictest wins: {strictest.decision} {strictest.describe()}"
    else:
        why = f"matches {matched[0].decision} {matched[0].describe()}"
    return Preview(decision, matched, why)
