"""Decisions: the task's constraints and people's own words, kept verbatim for good.

Every handoff carries them whole, with no byte budget, however many segments a session
goes through: they are the part a summary must never drop or rewrite (ARCHITECTURE.md,
failure 2). A decision stops being in force only when a person replaces it: by a steer
that names it, or by editing the task's constraints in the intent file.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

CONSTRAINTS_HEADING = "## Constraints"


@dataclass(slots=True)
class Decision:
    number: int  # shown as D<number>
    kind: str  # "constraint", "steer", "chat", "denial"
    author: str  # who said it ("task intent" for constraints)
    text: str  # verbatim
    step: int
    superseded_by: int | None = None  # the decision that replaced it
    superseded_note: str = ""  # how it was replaced, when not by another decision

    @property
    def label(self) -> str:
        return f"D{self.number}"

    @property
    def in_force(self) -> bool:
        return self.superseded_by is None and not self.superseded_note

    def origin(self) -> str:
        if self.kind == "constraint":
            return "task constraint"
        if self.kind == "denial":
            return f"approval denied by {self.author}, step {self.step}"
        where = "steer" if self.kind == "steer" else "room chat"
        return f"{where} from {self.author}, step {self.step}"


@dataclass(slots=True)
class Decisions:
    items: list[Decision] = field(default_factory=list)

    def add(self, *, kind: str, author: str, text: str, step: int, replaces: tuple[int, ...] = ()) -> Decision:
        decision = Decision(len(self.items) + 1, kind, author, text, step)
        self.items.append(decision)
        for number in replaces:
            old = self.get(number)
            if old is not None and old.in_force and old.number != decision.number:
                old.superseded_by = decision.number
        return decision

    def get(self, number: int) -> Decision | None:
        return self.items[number - 1] if 0 < number <= len(self.items) else None

    def active(self) -> list[Decision]:
        return [d for d in self.items if d.in_force]

    def superseded(self) -> list[Decision]:
        return [d for d in self.items if not d.in_force]

    def sync_constraints(self, intent_text: str, step: int) -> None:
        """Match the constraint decisions to the intent file's constraints section.

        A constraint line a person removed or rewrote is superseded by the edit; a new
        line becomes a new decision; an unchanged line keeps its number."""
        current = constraint_lines(intent_text)
        standing = {d.text: d for d in self.items if d.kind == "constraint" and d.in_force}
        for text, decision in standing.items():
            if text not in current:
                decision.superseded_note = f"removed or rewritten in the task intent at step {step}"
        for text in current:
            if text not in standing:
                self.add(kind="constraint", author="task intent", text=text, step=step)

    def to_json(self) -> list[dict[str, Any]]:
        return [asdict(d) for d in self.items]

    @classmethod
    def from_json(cls, data: list[dict[str, Any]]) -> Decisions:
        return cls([Decision(**item) for item in data])


def render_person_message(decision: Decision, replaces: tuple[int, ...] = ()) -> str:
    """How a person's message reads in the conversation: who, its decision label (which
    a later steer can name to replace it), what it replaces, then the words verbatim."""
    who = f"steer from {decision.author}" if decision.kind == "steer" else f"{decision.author} in the room"
    replaced = f", replaces {', '.join(f'D{n}' for n in replaces)}" if replaces else ""
    return f"[{who}, {decision.label}{replaced}] {decision.text}"


def constraint_lines(intent_text: str) -> list[str]:
    """The constraints section of an intent file, one constraint per non-empty line,
    each exactly as typed (a "(none given)" placeholder is no constraint)."""
    lines: list[str] = []
    inside = False
    for line in intent_text.splitlines():
        if line.startswith("## "):
            inside = line.startswith(CONSTRAINTS_HEADING)
            continue
        if inside and line.strip() and line.strip() != "(none given)" and line not in lines:
            lines.append(line)
    return lines
