"""The handoff that opens a new segment: a fixed structure, mostly built from records.

What the records already know is never left to a model: the task, the coordinates
(files, symbols, lines from the ledger and the writes), the decisions (people's words,
verbatim, no budget, see decisions.py), verification (commands and exit codes) and the
references to recall. A model writes only the prose parts (progress and blockers, next
step); without it they come from records too. Every section but the decisions has a
byte budget, enforced by trimming after the parts are put together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from observations.gateway.decisions import Decision, Decisions

SECTION_BUDGETS: dict[str, int] = {
    "task": 1_000,
    "coordinates": 2_000,
    "verification": 1_000,
    "progress": 2_000,
    "next_step": 800,
    "references": 1_200,
}
SECTION_TITLES: dict[str, str] = {
    "task": "Current task",
    "coordinates": "Coordinates",
    "decisions": "Decisions (the task's constraints and people's words, verbatim; they stand until a person replaces them)",
    "verification": "Verification so far",
    "progress": "Progress and blockers",
    "next_step": "Next step",
    "references": "References",
}
SECTIONS = ("task", "coordinates", "decisions", "verification", "progress", "next_step", "references")
PROSE_SECTIONS = ("progress", "next_step")
TRIMMED = "\n[… trimmed to this section's budget]"

PROSE_INSTRUCTIONS = (
    "The conversation is about to be reset to save room: a new segment starts with a handoff note. "
    "Records already give the task, files, people's decisions (verbatim), commands and exit codes. "
    "Write only the two parts records cannot: under the heading '## Progress and blockers' what is "
    "done, what is known, what is failing and why; under '## Next step' the very next thing to do. "
    "Be concrete (files, functions, commands); no tool calls; at most {progress} and {next_step} "
    "bytes."
)

_DEFINITION = re.compile(
    r"^\s*(?:\d+[\t:→]\s?)?\s*(?:export\s+)?(?:async\s+)?(?:def|class|function|func|fn|interface|struct|enum|trait)\s+"
    r"([A-Za-z_][A-Za-z0-9_]*)",
    re.M,
)
SYMBOLS_PER_FILE = 4
_CHECK_COMMAND = re.compile(
    r"\b(?:py\.?test|unittest|tox|nox|(?:npm|yarn|pnpm|bun)\s+(?:run\s+)?test|go\s+test|cargo\s+test|"
    r"make\s+(?:test|check)|mvn\s+\S*\s*test|gradle\w*\s+test|rspec|phpunit|ctest|jest|vitest|mocha|"
    r"runtests|manage\.py\s+test)\b"
)


def is_check_command(command: str) -> bool:
    """Whether a shell line runs tests or checks: its exit code is verification."""
    return bool(_CHECK_COMMAND.search(command))


def symbols_in(text: str) -> list[str]:
    """Names defined in a text (Python, JS/TS, Go, Rust, C-like declarations)."""
    return list(dict.fromkeys(_DEFINITION.findall(text)))[:SYMBOLS_PER_FILE]


@dataclass(slots=True)
class FileNote:
    """What the session did with one file: the coordinates a handoff lists."""

    path: str
    written: bool = False
    ranges: list[str] = field(default_factory=list)  # "12-40" as read
    symbols: list[str] = field(default_factory=list)
    last_step: int = 0
    last_written: int = -1  # the step of the last write
    # The working set's index (view.PolicyView.working_set): the obs_id of the file's
    # newest read, and the pids of the bodies written to it since (a whole new body
    # supersedes the ones before it).
    newest_read: int = -1
    bodies: list[int] = field(default_factory=list)

    def note_read(self, rng: str, symbols: list[str], step: int) -> None:
        if rng and rng not in self.ranges:
            self.ranges = (self.ranges + [rng])[-3:]
        self.symbols = list(dict.fromkeys(symbols + self.symbols))[:SYMBOLS_PER_FILE]
        self.last_step = max(self.last_step, step)

    def note_write(self, symbols: list[str], step: int) -> None:
        self.written = True
        self.last_written = max(self.last_written, step)
        self.symbols = list(dict.fromkeys(symbols + self.symbols))[:SYMBOLS_PER_FILE]
        self.last_step = max(self.last_step, step)

    def line(self) -> str:
        parts = [self.path, "(changed)" if self.written else "(read)"]
        if self.symbols:
            parts.append("symbols " + ", ".join(self.symbols))
        if self.ranges:
            parts.append("lines " + ", ".join(self.ranges))
        return "- " + " ".join(parts)


@dataclass(frozen=True, slots=True)
class Handoff:
    segment: int  # the segment it opens
    reason: str
    sections: dict[str, str]  # every section's body, decisions included
    prose_source: str  # "model", "records" or "stand-in" (replay)

    def render(self) -> str:
        out = [
            f"# Handoff: segment {self.segment} of this session starts here ({self.reason}). "
            "Earlier segments are stored: history_search finds them, recall returns any ref below."
        ]
        for name in SECTIONS:
            out.append(f"## {SECTION_TITLES[name]}\n{self.sections[name]}")
        return "\n\n".join(out) + "\n"

    def sizes(self) -> dict[str, int]:
        return {name: len(self.sections[name].encode()) for name in SECTIONS}


def trim(text: str, budget: int) -> str:
    """``text`` within ``budget`` bytes, cut at a line (or character) boundary."""
    data = text.encode()
    if len(data) <= budget:
        return text
    room = max(0, budget - len(TRIMMED.encode()))
    cut = data[:room].decode("utf-8", "ignore")
    if "\n" in cut:
        cut = cut[: cut.rindex("\n")]
    return cut + TRIMMED


def render_decisions(decisions: Decisions) -> str:
    active = decisions.active()
    lines = [_decision_line(d) for d in active] or ["(none: no constraints given and no words from people yet)"]
    superseded = decisions.superseded()
    if superseded:
        lines.append("\nSuperseded (NOT in force; kept only so you know they were replaced):")
        lines += [_decision_line(d, replaced=True) for d in superseded]
    return "\n".join(lines)


def _decision_line(decision: Decision, *, replaced: bool = False) -> str:
    status = ""
    if replaced:
        status = f"; replaced by D{decision.superseded_by}" if decision.superseded_by else f"; {decision.superseded_note}"
    # The words exactly as given: several lines stay several lines, unindented.
    separator = "\n" if "\n" in decision.text else " "
    return f"- {decision.label} ({decision.origin()}{status}):{separator}{decision.text}"


def parse_prose(text: str) -> dict[str, str]:
    """The two prose parts of a model's answer; unheaded text counts as progress."""
    parts = {"progress": "", "next_step": ""}
    current = "progress"
    lines: dict[str, list[str]] = {"progress": [], "next_step": []}
    for line in text.strip().splitlines():
        heading = line.strip().lstrip("#").strip().lower().rstrip(":")
        if line.lstrip().startswith("#") or heading in ("progress and blockers", "next step"):
            if heading.startswith("next"):
                current = "next_step"
                continue
            if heading.startswith("progress"):
                current = "progress"
                continue
        lines[current].append(line)
    for name in parts:
        parts[name] = "\n".join(lines[name]).strip()
    return parts


def build_handoff(
    *,
    segment: int,
    reason: str,
    task: str,
    files: list[FileNote],
    decisions: Decisions,
    verification: list[str],
    references: list[str],
    prose: dict[str, str],
    prose_source: str,
) -> Handoff:
    coordinates = "\n".join(f.line() for f in sorted(files, key=lambda f: (not f.written, -f.last_step)))
    bodies = {
        "task": task.strip() or "(see the task intent above)",
        "coordinates": coordinates or "(no files touched yet)",
        "verification": "\n".join(verification) or "(nothing run yet)",
        "progress": prose.get("progress", "").strip() or "(not recorded)",
        "next_step": prose.get("next_step", "").strip() or "(not recorded)",
        "references": "\n".join(references) or "(none)",
    }
    sections = {name: trim(body, SECTION_BUDGETS[name]) for name, body in bodies.items()}
    sections["decisions"] = render_decisions(decisions)
    return Handoff(segment, reason, sections, prose_source)
