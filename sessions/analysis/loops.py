"""The live loop alarm: is the agent going in circles?

At each step boundary the step loop asks `watch` whether the session now shows one of
three patterns, each raised once (by its key) with one nudge that names what repeats:

- **re-read**: the same content (path, line range and content hash) read ``rereads``
  times within the last ``window`` steps;
- **failing command**: the identical command failing ``failing_runs`` times within the
  last ``window`` steps;
- **stall**: ``stall_steps`` steps with no write and no test run (raised again only
  after the agent wrote or tested and then stalled anew).

Plain Python over plain facts; `tool_facts` builds the facts from a live gateway
context, sessions.analysis.selectors from the database.
"""

from __future__ import annotations

import hashlib
import weakref
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sessions.analysis.commands import (
    is_test_command,
    job_exit_codes,
    normalize_command,
    shell_exit_code,
    yielded_job,
)
from sessions.analysis.facts import WRITING_TOOLS, ReadKey, ToolFact

if TYPE_CHECKING:
    from observations.gateway.context import SessionContext

REREAD, FAILING, STALL = "reread", "failing_command", "stall"


@dataclass(frozen=True, slots=True)
class LoopRules:
    rereads: int = 3
    failing_runs: int = 3
    window: int = 10  # steps
    stall_steps: int = 20

    def __post_init__(self) -> None:
        if min(self.rereads, self.failing_runs, self.window, self.stall_steps) < 2:
            raise ValueError("loop alarm thresholds and the window must be at least 2")


@dataclass(frozen=True, slots=True)
class Alarm:
    kind: str
    key: str  # raised once per key
    subject: str  # what repeats, for people and for the nudge
    count: int
    steps: tuple[int, ...]  # the steps that repeat it (stall: its first and last)
    nudge: str

    def payload(self, step: int) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key, "subject": self.subject, "count": self.count,
                "steps": list(self.steps), "step": step, "nudge": self.nudge}


def describe_read(key: ReadKey) -> str:
    path, start, end, _ = key
    if start is None and end is None:
        return path
    return f"{path} lines {start or 1}-{end if end is not None else 'end'}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def suspicions(tools: list[ToolFact], *, step: int, rules: LoopRules, check_command: str = "",
               last_progress: int | None = None) -> list[Alarm]:
    """Every pattern ``tools`` shows at ``step`` (raised or not). ``last_progress``: the
    step of the latest write or test run, when the caller knows it (``tools`` may then
    hold only the recent calls)."""
    recent = [t for t in tools if t.step > step - rules.window]
    found: list[Alarm] = []
    reads: dict[ReadKey, list[int]] = defaultdict(list)
    for fact in recent:
        if fact.tool == "read_file" and fact.read is not None:
            reads[fact.read].append(fact.step)
    for key, steps in reads.items():
        if len(steps) >= rules.rereads:
            subject = describe_read(key)
            found.append(Alarm(
                REREAD, f"{REREAD}:{_digest(repr(key))}", subject, len(steps), tuple(steps),
                f"[hub: loop suspected] You have read {subject} {len(steps)} times in the last "
                f"{rules.window} steps, and its content did not change. Take what you need from it "
                "and move on: make the change, or run a test.",
            ))
    failing: dict[str, list[int]] = defaultdict(list)
    for fact in recent:
        if fact.tool == "shell" and fact.exit_code not in (None, 0):
            failing[normalize_command(fact.command)].append(fact.step)
    for command, steps in failing.items():
        if len(steps) >= rules.failing_runs:
            found.append(Alarm(
                FAILING, f"{FAILING}:{_digest(command)}", command, len(steps), tuple(steps),
                f"[hub: loop suspected] `{command}` failed {len(steps)} times in the last {rules.window} "
                "steps. Running it again the same way will fail the same way: read its output, "
                "change the code or the approach, then run it.",
            ))
    if last_progress is None:
        last_progress = max((t.step for t in tools if _is_progress(t, check_command)), default=0)
    progress = last_progress
    idle = step - progress
    if idle >= rules.stall_steps:
        found.append(Alarm(
            STALL, f"{STALL}:{progress}", "no write and no test", idle, (progress + 1, step),
            f"[hub: loop suspected] {idle} steps without writing a file or running a test. "
            "Decide on a change and make it, or run the tests to see where things stand.",
        ))
    return found


def _is_progress(fact: ToolFact, check_command: str) -> bool:
    if fact.tool in WRITING_TOOLS:
        return True
    return fact.tool == "shell" and is_test_command(fact.command, check_command)


def new_alarms(tools: list[ToolFact], *, step: int, raised: list[str], rules: LoopRules,
               check_command: str = "", last_progress: int | None = None) -> list[Alarm]:
    """The alarms to raise now: what `suspicions` finds that was not raised before."""
    return [a for a in suspicions(tools, step=step, rules=rules, check_command=check_command,
                                  last_progress=last_progress)
            if a.key not in raised]


def tool_facts(ctx: SessionContext, *, after_step: int = -1) -> list[ToolFact]:
    """The session's tool calls of steps after ``after_step`` as facts, from the live
    context: read ranges from the ledger's keys, shell exit codes from results and from
    the job reports that came later (as messages or through ``await``)."""
    start = len(ctx.observations)
    while start > 0 and ctx.observations[start - 1].step > after_step:
        start -= 1
    recent = ctx.observations[start:]
    if not recent:
        return []
    exits: dict[str, int] = {}
    for entry in ctx.entries[recent[0].entry_index:]:
        if entry.kind == "job":
            exits.update(job_exit_codes(entry.text))
    for obs in recent:
        if obs.source.tool == "await":
            exits.update(job_exit_codes(obs.source.text))
    facts = []
    for obs in recent:
        src = obs.source
        code = job = None
        if src.tool == "shell":
            code = shell_exit_code(src.text)
            job = yielded_job(src.text) if code is None else None
            code = exits.get(job, code) if job else code
        facts.append(ToolFact(
            step=obs.step, call_id=src.call_id, tool=src.tool, arguments=src.arguments,
            read=src.read.key if src.read is not None else None, exit_code=code, job=job, tokens=src.tokens,
        ))
    return facts


def watch(ctx: SessionContext, raised: list[str], rules: LoopRules, check_command: str = "") -> list[Alarm]:
    """The alarms this boundary raises for the session in ``ctx``: it looks at the calls
    of the last window (and back to the latest write or test run), not the whole run."""
    recent = tool_facts(ctx, after_step=ctx.step - max(rules.window, rules.stall_steps))
    return new_alarms(recent, step=ctx.step, raised=raised, rules=rules, check_command=check_command,
                      last_progress=_last_progress(ctx, check_command))


# Per live context: (observations looked at, step of the latest write or test run among
# them), so each boundary looks only at the calls that came since the last one.
_PROGRESS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _last_progress(ctx: SessionContext, check_command: str) -> int:
    """The step of the latest write or test run (0: none yet)."""
    seen, step = _PROGRESS.get(ctx, (0, 0))
    if seen > len(ctx.observations):
        seen, step = 0, 0
    for obs in ctx.observations[seen:]:
        src = obs.source
        command = src.arguments.get("command") if isinstance(src.arguments, dict) else None
        if src.tool in WRITING_TOOLS or (
                src.tool == "shell" and isinstance(command, str) and is_test_command(command, check_command)):
            step = obs.step
    _PROGRESS[ctx] = (len(ctx.observations), step)
    return step
