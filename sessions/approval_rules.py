"""A room's approval rules as people write them: checked before they are stored, read
back as the plain `Rule`s the loop decides with (sessions/runtime/approvals.py)."""

from __future__ import annotations

from typing import Any

from agents.tools import registry
from rooms.checks import check_storable_text
from rooms.errors import RoomError
from sessions.models import ApprovalRule, Decision
from sessions.runtime.approvals import PATH_TOOLS, Rule

TOOL_NAMES = registry.NAMES
PATTERN_MAX = 300  # ApprovalRule's columns


def rule_checked(*, tool: str, path_glob: str = "", command_prefix: str = "", decision: str) -> dict[str, Any]:
    """The fields of a rule, cleaned, or RoomError saying what to change."""
    tool = (tool or "*").strip()
    path_glob = check_storable_text((path_glob or "").strip(), what="The path glob")
    command_prefix = " ".join(check_storable_text(command_prefix or "", what="The command prefix").split())
    if decision not in Decision.values:
        raise RoomError("Decide allow, ask or deny.", code="invalid")
    if tool != "*" and tool not in TOOL_NAMES:
        raise RoomError(f"There is no tool {tool!r}; pick one of {', '.join(TOOL_NAMES)} or * for every tool.",
                        code="invalid")
    if len(path_glob) > PATTERN_MAX or len(command_prefix) > PATTERN_MAX:
        raise RoomError(f"Keep patterns under {PATTERN_MAX} characters.", code="invalid")
    if path_glob and tool not in PATH_TOOLS | {"*"}:
        raise RoomError(f"`{tool}` works on no path: a path glob never matches it.", code="invalid")
    if command_prefix and tool not in registry.SHELL_TOOLS | {"*"}:
        raise RoomError("A command prefix only applies to shell.", code="invalid")
    return {"tool": tool, "path_glob": path_glob, "command_prefix": command_prefix, "decision": decision}


def as_rule(row: ApprovalRule) -> Rule:
    return Rule(row.decision, row.tool or "*", row.path_glob, row.command_prefix)


def rule_describe(row: ApprovalRule) -> str:
    return as_rule(row).describe()


def room_rules(room_id: int) -> list[Rule]:
    """The room's rules, as the loop applies them."""
    return [as_rule(row) for row in ApprovalRule.objects.filter(room_id=room_id).order_by("pk")]
