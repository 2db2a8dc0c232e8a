"""Long-session eval scenarios: what one holds (reading the files: scenario_files.py).

A scenario is a room repository to start from, a task (its constraints are the
person's turn-1 words), 13–14 turns of people's messages, steers and constraint edits,
forced resets, the scripted agent's side of every turn, and the checks. Every bad field
is reported with where it is (``turns[3].agent[0].calls[1].tool: ...``), all at once.

Plain Python: no Django import (the `script:` provider loads scenarios in the worker).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

KINDS = ("constraint_survives", "constraint_changed", "topics", "injection")
TOOLS = ("read_file", "write_file", "edit_file", "list_files", "search", "shell", "recall", "history_search")
REQUEST_CHECKS = ("in_force", "superseded", "stays_in_tool_result", "coordinates", "latest_person_message",
                  "files_touched")
BEHAVIOUR_CHECKS = ("untouched", "last_answer_mentions", "file_contains")
DECISIONS = ("allow", "ask", "deny")
DEFAULT_RULES = tuple({"tool": tool, "decision": "allow"} for tool in TOOLS)
DEFAULT_PROSE = ("## Progress and blockers\nThe scripted agent did what each message asked; the records above "
                 "list the files and commands.\n## Next step\nWait for the next message and do what it asks.")
TOP_KEYS = {"name", "kind", "description", "window", "output_budget", "repo", "check_command", "rules",
            "approvals", "task", "turns", "checks", "handoff_prose"}


class ScenarioError(ValueError):
    """A scenario file that cannot be run; ``problems`` lists every bad field."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source, self.problems = source, problems
        super().__init__(f"{source}: " + ("; ".join(problems) if len(problems) == 1 else
                                          "\n  - " + "\n  - ".join(problems)))


@dataclass(frozen=True, slots=True)
class Call:
    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AgentStep:
    say: str
    calls: tuple[Call, ...]


@dataclass(frozen=True, slots=True)
class Turn:
    number: int  # from 1
    person: str  # the person's message (a steer); "" on turn 1, where the task speaks
    replaces: tuple[int, ...]
    constraints: str | None  # the person edits the task's constraints to this before the message
    reset: bool  # a person asks for a new segment before this turn's message
    agent: tuple[AgentStep, ...]
    answer: str  # the agent's words when it ends the turn


@dataclass(frozen=True, slots=True)
class Check:
    family: str  # "request" or "behaviour"
    kind: str
    params: dict[str, Any]

    @property
    def label(self) -> str:
        what = self.params.get("text") or self.params.get("path") or self.params.get("path_glob") or ""
        if self.kind == "files_touched":
            what = ", ".join(self.params.get("expected", []))
        return f"{self.kind}: {str(what)[:60]}"


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    kind: str
    description: str
    window: int
    output_budget: int
    files: dict[str, str]
    check_command: str
    rules: tuple[dict[str, str], ...]
    approvals: tuple[dict[str, str], ...]
    title: str
    objective: str
    constraints: str
    turns: tuple[Turn, ...]
    checks: tuple[Check, ...]
    handoff_prose: tuple[str, ...]
    raw: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @property
    def version(self) -> str:
        """The scenario's content (not its file name or formatting): what compare
        matches, so an edited scenario is a different version."""
        return hashlib.sha256(canonical(self.raw).encode()).hexdigest()[:12]

    @property
    def resets_asked(self) -> int:
        return sum(1 for t in self.turns if t.reset)

    def request_checks(self) -> list[Check]:
        return [c for c in self.checks if c.family == "request"]

    def behaviour_checks(self) -> list[Check]:
        return [c for c in self.checks if c.family == "behaviour"]


def canonical(raw: dict[str, Any]) -> str:
    return json.dumps(raw, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


