"""Trace analysis: what an agent did in one session and what it cost, in figures.

`analyze` reads a session's facts (sessions.analysis.facts) and counts the patterns
agents fail by: re-reading the same content, reading back what they just wrote,
rerunning the same command, running tests again after they passed, folds and segments,
and where the time went. ``manage.py analyze`` prints it; the session page shows the
same `rows()`; room and agent pages add stored analyses up with `add_up`.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from observations.gateway.prices import format_usd
from sessions.analysis.commands import is_test_command, normalize_command
from sessions.analysis.facts import Event, SessionFacts, ToolFact

# Figures that add up across sessions (room and agent totals); the rest are per session.
ADDITIVE = (
    "sessions", "steps", "model_calls", "failed_calls", "tool_calls", "parallel_steps", "tokens_in",
    "tokens_cache_read", "tokens_cache_write", "tokens_out", "tokens_reasoning", "cost_unknown_calls",
    "rereads", "reads_after_own_write", "shell_runs", "shell_failed", "repeated_commands", "test_runs",
    "test_failed", "tests_after_first_pass", "folds", "fold_tokens_freed", "segments", "model_ms",
    "tools_ms", "approvals_ms", "waiting_ms", "loop_alarms", "verify_runs", "verify_passed",
)

# Figures stored under another name by earlier versions (analyses are kept as JSON).
EARLIER_NAMES = {"approvals_ms": "people_ms"}


@dataclass
class Analysis:
    sessions: int = 1
    steps: int = 0
    model_calls: int = 0
    failed_calls: int = 0
    tool_calls: int = 0
    parallel_steps: int = 0  # steps that asked for more than one tool call
    max_calls_in_step: int = 0
    tokens_in: int = 0  # every input token, cached included
    tokens_cache_read: int = 0
    tokens_cache_write: int = 0
    tokens_out: int = 0  # reasoning included
    tokens_reasoning: int = 0
    cost: Decimal | None = Decimal(0)  # of the priced calls; None when no call has a price
    cost_unknown_calls: int = 0
    tools: dict[str, int] = field(default_factory=dict)
    rereads: int = 0  # reads of a range with the same content read before
    reread_ranges: list[dict[str, Any]] = field(default_factory=list)
    reads_after_own_write: int = 0
    shell_runs: int = 0
    shell_failed: int = 0
    repeated_commands: int = 0  # runs of a command run before
    commands_repeated: list[dict[str, Any]] = field(default_factory=list)
    test_runs: int = 0
    test_failed: int = 0
    tests_after_first_pass: int = 0
    phases: dict[str, int] = field(default_factory=lambda: {"explore": 0, "write_to_green": 0, "after_green": 0})
    first_write_step: int | None = None
    first_green_step: int | None = None
    folds: int = 0
    fold_tokens_freed: int = 0
    segments: int = 0
    model_ms: int = 0
    tools_ms: int = 0
    approvals_ms: int = 0  # parked on an approval card
    waiting_ms: int = 0  # parked on its own await (a job, a reply, a timer)
    loop_alarms: int = 0
    verify_runs: int = 0
    verify_passed: int = 0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["cost"] = None if self.cost is None else str(self.cost)
        return data

    def rows(self) -> list[tuple[str, str]]:
        """The figures as (label, value) lines, for the command and the session page."""
        tools = ", ".join(f"{name} {count}" for name, count in self.tools.items()) or "none"
        phases = self.phases
        cost = format_usd(self.cost)
        if self.cost_unknown_calls:
            cost += f" (+ {self.cost_unknown_calls} call{'s' if self.cost_unknown_calls != 1 else ''} without a price)"
        return [
            ("Steps", f"{self.steps:,}"),
            ("Model calls", f"{self.model_calls:,}" + (f" ({self.failed_calls} failed)" if self.failed_calls else "")),
            ("Tool calls", f"{self.tool_calls:,}"),
            ("Parallel steps", f"{self.parallel_steps:,} (max {self.max_calls_in_step} calls in one step)"),
            ("Tokens in", f"{self.tokens_in:,} (cache read {self.tokens_cache_read:,}, "
                          f"cache write {self.tokens_cache_write:,})"),
            ("Tokens out", f"{self.tokens_out:,} (reasoning {self.tokens_reasoning:,})"),
            ("Cost", cost),
            ("Tools used", tools),
            ("Re-reads (same range and content)", f"{self.rereads:,}"),
            ("Reads after its own write", f"{self.reads_after_own_write:,}"),
            ("Shell runs", f"{self.shell_runs:,} ({self.shell_failed:,} failed)"),
            ("Repeated commands", f"{self.repeated_commands:,}"),
            ("Test runs", f"{self.test_runs:,} ({self.test_failed:,} failed, "
                          f"{self.tests_after_first_pass:,} after the first pass)"),
            ("Phases (model calls)", f"explore {phases['explore']} → first write → green "
                                     f"{phases['write_to_green']} → after green {phases['after_green']}"),
            ("Folds", f"{self.folds:,} ({self.fold_tokens_freed:,} tokens freed)"),
            ("Segments", f"{self.segments:,}"),
            ("Time", f"model calls {_seconds(self.model_ms)}, tools {_seconds(self.tools_ms)}, "
                     f"waiting for approvals {_seconds(self.approvals_ms)}, awaiting {_seconds(self.waiting_ms)}"),
            ("Verify", f"{self.verify_runs:,} run{'s' if self.verify_runs != 1 else ''}, {self.verify_passed:,} passed"),
            ("Loop alarms", f"{self.loop_alarms:,}"),
        ]


def _seconds(ms: int) -> str:
    return f"{ms / 1000:,.1f} s"


def analyze(facts: SessionFacts) -> Analysis:
    result = Analysis()
    _calls(result, facts)
    _tools(result, facts.tools)
    _files(result, facts.tools)
    _commands(result, facts.tools, facts.check_command)
    _phases(result, facts)
    result.folds = len(facts.folds)
    result.fold_tokens_freed = sum(f.tokens_freed for f in facts.folds)
    result.segments = len(facts.segments)
    result.approvals_ms = _parked_ms(facts.events, facts.finished_at, "awaiting_approval")
    result.waiting_ms = _parked_ms(facts.events, facts.finished_at, "waiting")
    result.loop_alarms = sum(1 for e in facts.events if e.kind == "loop.suspected")
    verifies = [e for e in facts.events if e.kind == "verify"]
    result.verify_runs = len(verifies)
    result.verify_passed = sum(1 for e in verifies if e.payload.get("exit_code") == 0)
    return result


def _calls(result: Analysis, facts: SessionFacts) -> None:
    calls = facts.calls
    result.steps = max([facts.steps, *(c.step for c in calls)], default=0)
    result.model_calls = len(calls)
    result.failed_calls = sum(1 for c in calls if c.error)
    result.tokens_in = sum(c.input_tokens for c in calls)
    result.tokens_cache_read = sum(c.cached_input_tokens for c in calls)
    result.tokens_cache_write = sum(c.cache_write_tokens for c in calls)
    result.tokens_out = sum(c.output_tokens for c in calls)
    result.tokens_reasoning = sum(c.reasoning_tokens for c in calls)
    priced = [c.cost for c in calls if c.cost is not None]
    result.cost = sum(priced, Decimal(0)) if priced or not calls else None
    result.cost_unknown_calls = len(calls) - len(priced)
    result.model_ms = sum(c.latency_ms for c in calls)


def _tools(result: Analysis, tools: tuple[ToolFact, ...]) -> None:
    result.tool_calls = len(tools)
    result.tools = dict(Counter(t.tool for t in tools).most_common())
    per_step = Counter(t.step for t in tools)
    result.parallel_steps = sum(1 for n in per_step.values() if n > 1)
    result.max_calls_in_step = max(per_step.values(), default=0)
    result.tools_ms = sum(t.duration_ms for t in tools)


def _norm(path: str) -> str:
    return posixpath.normpath(path) if path else ""


def _files(result: Analysis, tools: tuple[ToolFact, ...]) -> None:
    seen: Counter = Counter()
    written: set[str] = set()
    for fact in tools:
        written.update(_norm(path) for path in fact.writes)
        if fact.tool != "read_file" or fact.read is None:
            continue
        seen[fact.read] += 1
        if _norm(fact.read[0]) in written:
            result.reads_after_own_write += 1
    result.rereads = sum(n - 1 for n in seen.values())
    result.reread_ranges = [
        {"path": key[0], "start": key[1], "end": key[2], "reads": n} for key, n in seen.most_common() if n > 1
    ]


def _commands(result: Analysis, tools: tuple[ToolFact, ...], check_command: str) -> None:
    runs: Counter = Counter()
    failed: Counter = Counter()
    passed_once = False
    for fact in tools:
        if fact.tool != "shell" or not fact.command:
            continue
        command = normalize_command(fact.command)
        failing = fact.is_error or fact.exit_code not in (None, 0)
        result.shell_runs += 1
        result.shell_failed += failing
        runs[command] += 1
        failed[command] += failing
        if is_test_command(command, check_command):
            result.test_runs += 1
            result.test_failed += failing
            result.tests_after_first_pass += passed_once
            passed_once = passed_once or fact.exit_code == 0
    result.repeated_commands = sum(n - 1 for n in runs.values())
    result.commands_repeated = [
        {"command": command, "runs": n, "failed": failed[command]} for command, n in runs.most_common() if n > 1
    ]


def _phases(result: Analysis, facts: SessionFacts) -> None:
    """Model calls before the first write (explore), from it to the first passing test
    run after it (write to green), and after that (after green)."""
    write = next((t.step for t in facts.tools if t.writes), None)
    green = None
    if write is not None:
        green = next((t.step for t in facts.tools if t.step >= write and t.tool == "shell" and t.exit_code == 0
                      and is_test_command(t.command, facts.check_command)), None)
    result.first_write_step, result.first_green_step = write, green
    for call in facts.calls:
        if write is None or call.step < write:
            result.phases["explore"] += 1
        elif green is None or call.step <= green:
            result.phases["write_to_green"] += 1
        else:
            result.phases["after_green"] += 1


def _parked_ms(events: tuple[Event, ...], finished_at: datetime | None, state: str) -> int:
    """Time spent in ``state``: from entering it to leaving it (or to the session's end)."""
    total, since = 0.0, None
    for event in events:
        if event.kind != "session.state_changed" or event.at is None:
            continue
        if since is not None:
            total += (event.at - since).total_seconds()
            since = None
        if event.payload.get("state") == state:
            since = event.at
    if since is not None and finished_at is not None:
        total += (finished_at - since).total_seconds()
    return round(total * 1000)


def add_up(analyses: list[dict[str, Any]]) -> dict[str, Any]:
    """Room or agent totals of stored analyses (`Analysis.to_dict()` each)."""
    totals: dict[str, Any] = {
        name: sum(int(a.get(name) or a.get(EARLIER_NAMES.get(name, ""), 0) or 0) for a in analyses)
        for name in ADDITIVE
    }
    totals["sessions"] = len(analyses)
    priced = [Decimal(a["cost"]) for a in analyses if a.get("cost") is not None]
    totals["cost"] = sum(priced, Decimal(0)) if priced or not analyses else None
    tools: Counter = Counter()
    for a in analyses:
        tools.update(a.get("tools") or {})
    totals["tools"] = dict(tools.most_common())
    return totals
