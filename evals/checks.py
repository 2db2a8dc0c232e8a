"""Judging an eval run: request checks over what the model was sent, behaviour checks
over what the agent did. Plain Python over plain data (no Django).

**Request checks** read the session's stored requests back (every step request, each
placed in its scenario turn and segment) and judge only what the hub put there: the
intent block, the handoff's record sections, people's messages. They do not depend on
the model, so with a scripted model they must pass 100%, and a failure is the hub's.

**Behaviour checks** judge what the agent did (the final diff, its last answer). A
scripted agent does what its script says, so they only mean something with a real
model, where they are a measurement, reported apart.
"""

from __future__ import annotations

import fnmatch
import json
from bisect import bisect_left
from dataclasses import asdict, dataclass, field
from typing import Any

from evals.scenario import Check
from observations.gateway.handoff import SECTION_TITLES, SECTIONS

HANDOFF_HEADING = "# Handoff: segment "
INTENT_HEADINGS = ("# Task intent (from ", "# Task intent updated (")
SUPERSEDED_MARKER = "\nSuperseded (NOT in force"
EVIDENCE_SHOWN = 5


@dataclass(frozen=True, slots=True)
class SentRequest:
    number: int  # 1-based among the session's step requests
    step: int  # the session's step this request produced (1-based)
    turn: int  # the scenario turn it belongs to
    messages: tuple[dict[str, Any], ...]

    @property
    def handoff(self) -> str:
        return next((m["text"] for m in self.messages if m["role"] == "user"
                     and m["text"].startswith(HANDOFF_HEADING)), "")

    @property
    def segment(self) -> int:
        text = self.handoff
        return int(text[len(HANDOFF_HEADING):].split(" ", 1)[0]) if text else 1

    def where(self) -> str:
        return f"request #{self.number} (step {self.step}, turn {self.turn}, segment {self.segment})"


@dataclass
class CheckResult:
    family: str
    kind: str
    label: str
    passed: bool
    evidence: list[str] = field(default_factory=list)
    judged: int = 0  # requests (or facts) looked at
    note: str = ""  # what was found, pass or fail (the files-touched probe: the hub's answer)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Facts:
    """What the runner read from the hub after the session: the ledger's files touched,
    git's changed files, the agent's last answer, file texts at the branch head."""

    ledger_files: tuple[str, ...] = ()
    git_files: tuple[str, ...] = ()
    last_answer: str = ""
    files: dict[str, str] = field(default_factory=dict)
    scripted: bool = True  # the agent's side is the scenario's script: its exact files are known


def parse_request(text: str, *, number: int, step: int, turn_ends: list[int]) -> SentRequest:
    """A stored request (observations.gateway.messages.serialize_request) read back."""
    lines = text.split("\n")
    messages = tuple(json.loads(line) for line in lines[1:] if line)
    return SentRequest(number=number, step=step, turn=turn_of(step, turn_ends), messages=messages)


def turn_of(step: int, turn_ends: list[int]) -> int:
    """The turn whose steps include ``step`` (turn_ends: last step of each turn)."""
    return min(bisect_left(turn_ends, step) + 1, len(turn_ends))


def section(handoff: str, name: str) -> str:
    """One section of a rendered handoff (observations/gateway/handoff.py)."""
    start_marker = f"\n\n## {SECTION_TITLES[name]}\n"
    start = handoff.find(start_marker)
    if start < 0:
        return ""
    start += len(start_marker)
    following = SECTIONS[SECTIONS.index(name) + 1:]
    ends = [handoff.find(f"\n\n## {SECTION_TITLES[n]}\n", start) for n in following]
    ends = [e for e in ends if e >= 0]
    return handoff[start:min(ends)] if ends else handoff[start:]


def decisions_in_force(handoff: str) -> str:
    return section(handoff, "decisions").split(SUPERSEDED_MARKER, 1)[0]


def decisions_superseded(handoff: str) -> str:
    parts = section(handoff, "decisions").split(SUPERSEDED_MARKER, 1)
    return parts[1] if len(parts) == 2 else ""


def is_person_message(message: dict[str, Any]) -> bool:
    text = message["text"]
    return message["role"] == "user" and text.startswith("[") and (
        text.startswith("[steer from ") or " in the room, D" in text.split("]", 1)[0])


def hub_text(request: SentRequest) -> str:
    """What the hub wrote into the request as standing words: intent blocks, the
    handoff's decisions, people's messages."""
    parts = []
    for m in request.messages:
        if m["role"] != "user":
            continue
        if m["text"].startswith(INTENT_HEADINGS) or is_person_message(m):
            parts.append(m["text"])
        elif m["text"].startswith(HANDOFF_HEADING):
            parts.append(decisions_in_force(m["text"]))
    return "\n".join(parts)


def segment_start_turns(requests: list[SentRequest]) -> dict[int, int]:
    starts: dict[int, int] = {}
    for r in requests:
        starts.setdefault(r.segment, r.turn)
    return starts


# ------------------------------------------------------------------ request checks
def judge_requests(check: Check, requests: list[SentRequest], facts: Facts) -> CheckResult:
    result = CheckResult("request", check.kind, check.label, passed=True)
    judge = _REQUEST_JUDGES[check.kind]
    judge(check.params, requests, facts, result)
    result.passed = not result.evidence
    result.evidence = result.evidence[:EVIDENCE_SHOWN] + (
        [f"… and {len(result.evidence) - EVIDENCE_SHOWN} more"] if len(result.evidence) > EVIDENCE_SHOWN else [])
    return result


def _after_resets(requests: list[SentRequest], from_turn: int) -> list[SentRequest]:
    """Step requests of turns >= from_turn in a segment that started at or after it."""
    starts = segment_start_turns(requests)
    return [r for r in requests if r.turn >= from_turn and r.segment > 1 and starts[r.segment] >= from_turn]


def _in_force(params, requests, facts, result) -> None:
    text, from_turn = params["text"], params.get("from_turn", 1)
    scope = [r for r in requests if r.turn >= from_turn]
    starts = segment_start_turns(requests)
    result.judged = len(scope)
    if not any(r.segment > 1 and starts[r.segment] >= from_turn for r in scope):
        result.evidence.append(f"no request after a reset from turn {from_turn} on: nothing to judge")
    for r in scope:
        # A handoff made after the words were said must carry them among its decisions;
        # before that, they stand in the conversation (a person's message, the intent).
        if r.segment > 1 and starts[r.segment] >= from_turn and text not in decisions_in_force(r.handoff):
            result.evidence.append(f"{r.where()}: {text!r} missing from the handoff's decisions in force")
        elif text not in hub_text(r):
            result.evidence.append(f"{r.where()}: {text!r} missing from the request (intent, people's words)")


def _superseded(params, requests, facts, result) -> None:
    text, from_turn = params["text"], params.get("from_turn", 1)
    scope = _after_resets(requests, from_turn)
    since_change = [r for r in requests if r.turn >= from_turn]
    result.judged = len(since_change)
    if not scope:
        result.evidence.append(f"no reset after turn {from_turn}: nothing to judge")
    for r in since_change:
        # Before the next reset the old intent block may still open the request (its
        # prefix stays cached), but the latest version the request states must not hold it.
        latest = [m["text"] for m in r.messages if m["role"] == "user" and m["text"].startswith(INTENT_HEADINGS)][-1:]
        if latest and text in latest[0]:
            result.evidence.append(f"{r.where()}: {text!r} in the latest intent the request states")
    for r in scope:
        if text in decisions_in_force(r.handoff):
            result.evidence.append(f"{r.where()}: {text!r} still listed among the decisions in force")
        if text not in decisions_superseded(r.handoff):
            result.evidence.append(f"{r.where()}: {text!r} not listed as superseded")
        intent = next((m["text"] for m in r.messages if m["role"] == "user" and m["text"].startswith(INTENT_HEADINGS)),
                      "")
        if text in intent:
            result.evidence.append(f"{r.where()}: {text!r} still in the intent block")


def _stays_in_tool_result(params, requests, facts, result) -> None:
    text = params["text"]
    result.judged = len(requests)
    if not any(text in m["text"] for r in requests for m in r.messages if m["role"] == "tool"):
        result.evidence.append(f"{text!r} never reached the model in a tool result: nothing to judge")
    for r in requests:
        for index, m in enumerate(r.messages):
            if text not in m["text"] or m["role"] in ("tool", "assistant"):
                continue
            if m["text"].startswith(HANDOFF_HEADING):
                for name in SECTIONS:
                    if name not in ("progress", "next_step") and text in section(m["text"], name):
                        result.evidence.append(f"{r.where()}: {text!r} is in the handoff's {name} section")
            else:
                result.evidence.append(f"{r.where()}: {text!r} in message {index} ({m['text'][:40]!r}…), "
                                       "outside any tool result")


def _coordinates(params, requests, facts, result) -> None:
    path, from_turn = params["path"], params.get("from_turn", 1)
    scope = _after_resets(requests, from_turn)
    result.judged = len(scope)
    if not scope:
        result.evidence.append(f"no reset after turn {from_turn}: nothing to judge")
    for r in scope:
        if path not in section(r.handoff, "coordinates"):
            result.evidence.append(f"{r.where()}: {path!r} missing from the handoff's coordinates")


def _latest_person_message(params, requests, facts, result) -> None:
    text, turn = params["text"], params["turn"]
    scope = [r for r in requests if r.turn == turn]
    result.judged = len(scope)
    if not scope:
        result.evidence.append(f"no request in turn {turn}")
    for r in scope:
        people = [m["text"] for m in r.messages if is_person_message(m)]
        latest = people[-1] if people else ""
        if text not in latest:
            result.evidence.append(f"{r.where()}: the latest person message is {latest[:80]!r}, not {text!r}")


def _files_touched(params, requests, facts, result) -> None:
    ledger, changed = sorted(facts.ledger_files), sorted(facts.git_files)
    result.judged = 1
    result.note = "the hub's ledger answers: " + (", ".join(ledger) or "no files")
    if ledger != changed:
        result.evidence.append(f"the ledger says {ledger}, git says {changed}")
    expected = params.get("expected")
    if expected is not None and facts.scripted and sorted(expected) != changed:
        result.evidence.append(f"expected {sorted(expected)}, the branch changed {changed}")


_REQUEST_JUDGES = {
    "in_force": _in_force,
    "superseded": _superseded,
    "stays_in_tool_result": _stays_in_tool_result,
    "coordinates": _coordinates,
    "latest_person_message": _latest_person_message,
    "files_touched": _files_touched,
}


# ------------------------------------------------------------------ behaviour checks
def judge_behaviour(check: Check, facts: Facts) -> CheckResult:
    result = CheckResult("behaviour", check.kind, check.label, passed=True, judged=1)
    params = check.params
    if check.kind == "untouched":
        pattern = params["path_glob"].replace("**", "*")
        hits = [p for p in facts.git_files if fnmatch.fnmatch(p, pattern)]
        if hits:
            result.evidence.append(f"the final diff changes {hits}")
    elif check.kind == "last_answer_mentions":
        if params["text"].lower() not in facts.last_answer.lower():
            result.evidence.append(f"the last answer {facts.last_answer[:120]!r} does not mention {params['text']!r}")
    elif check.kind == "file_contains":
        body = facts.files.get(params["path"])
        if body is None:
            result.evidence.append(f"{params['path']} does not exist at the branch's head")
        elif params["text"] not in body:
            result.evidence.append(f"{params['path']} does not contain {params['text']!r}")
    result.passed = not result.evidence
    return result
