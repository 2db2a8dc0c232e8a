"""Which tool calls run without a person: rules per room, strictest match wins."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

ALLOW, ASK, DENY = "allow", "ask", "deny"
_STRICTNESS = {ALLOW: 0, ASK: 1, DENY: 2}

# Read-only by default: these run without asking when no rule says otherwise.
READ_ONLY_TOOLS = frozenset({"read_file", "list_files", "search", "await", "post_message"})


@dataclass(frozen=True, slots=True)
class Rule:
    decision: str
    tool: str = "*"
    path_glob: str = ""
    command_prefix: str = ""

    def matches(self, tool: str, arguments: dict[str, Any]) -> bool:
        if self.tool not in ("*", tool):
            return False
        if self.path_glob:
            path = arguments.get("path")
            if not isinstance(path, str) or not _glob(path, self.path_glob):
                return False
        if self.command_prefix:
            command = arguments.get("command")
            if not isinstance(command, str) or not _has_prefix(command, self.command_prefix):
                return False
        return True


def _glob(path: str, pattern: str) -> bool:
    path = path[2:] if path.startswith("./") else path
    # `**/` may match no directory at all, so `src/**/*.py` covers `src/a.py`.
    return fnmatchcase(path, pattern) or ("**/" in pattern and fnmatchcase(path, pattern.replace("**/", "")))


def _has_prefix(command: str, prefix: str) -> bool:
    """Word-wise prefix, and only for a single command: `pytest && rm -rf /` is not `pytest`."""
    command, prefix = command.strip(), prefix.strip()
    if any(sep in command for sep in (";", "&&", "||", "|", "`", "$(", "\n", ">", "<")):
        return False
    words, wanted = command.split(), prefix.split()
    return words[: len(wanted)] == wanted


def decide(tool: str, arguments: dict[str, Any], rules: list[Rule], *, session_allowed: frozenset[str] = frozenset()) -> str:
    """allow / ask / deny for one call.

    ``session_allowed`` holds the tools a person approved "always for this session";
    they never lift a deny.
    """
    matching = [rule.decision for rule in rules if rule.matches(tool, arguments)]
    if matching:
        decision = max(matching, key=_STRICTNESS.__getitem__)
    else:
        decision = ALLOW if tool in READ_ONLY_TOOLS else ASK
    if decision == ASK and tool in session_allowed:
        return ALLOW
    return decision
