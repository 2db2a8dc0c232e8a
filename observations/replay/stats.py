"""How much of a trajectory set's file access is recognised, per source.

Every tool call is put in one class by its strongest access (`call_kind`): write, edit,
read, search, list, or other. A call is also *read-like* when it asks for file text: an
editor ``view`` of a file, or a shell pipeline that starts with a file printer (``cat``,
``nl``, ``head``, ``tail``, ``less``, ``more``, ``sed -n``, ``awk``) given a file and
whose output is not redirected. Each read-like call ends up as one of:

* ``read``: recorded with its path and line range;
* ``search``: the text was narrowed by ``grep`` or a regex address, so it is a search;
* ``cut``: the agent cut the output before the model saw it (elided, clipped or
  abbreviated), so the read is deliberately not recorded;
* ``failed``: the tool reported an error (no such file, bad range);
* ``missed``: none of the above — recognition could not name it.

``handled`` is the share of read-like calls that were not missed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from observations.replay.actions import call_kind
from observations.replay.trajectory import ToolEvent, Trajectory
from observations.shell.programs import program_words
from observations.shell.syntax import parse_command

CLASSES = ("read", "write", "edit", "search", "list", "other")
OUTCOMES = ("read", "search", "cut", "failed", "missed")
_PRINTERS = frozenset({"cat", "nl", "head", "tail", "less", "more", "awk"})
_CUT = (
    "<elided_chars>",
    "<response clipped>",
    "too large to display entirely",
    "[... Command output truncated",
)
_FAILED = ("No such file or directory", "does not exist", "Invalid `view_range`", "ERROR:")


@dataclass(slots=True)
class SourceStats:
    trajectories: int = 0
    steps: int = 0
    calls: Counter[str] = field(default_factory=Counter)
    read_like: Counter[str] = field(default_factory=Counter)

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())


def recognition_stats(trajectories: Iterable[Trajectory]) -> dict[str, SourceStats]:
    by_source: dict[str, SourceStats] = {}
    for trajectory in trajectories:
        stats = by_source.setdefault(trajectory.source, SourceStats())
        stats.trajectories += 1
        stats.steps += len(trajectory.steps)
        for step in trajectory.steps:
            for event in step.events:
                kind = call_kind(event.accesses)
                stats.calls[kind] += 1
                if kind not in ("write", "edit", "list") and _is_read_like(event):
                    stats.read_like[_outcome(event, kind)] += 1
    return by_source


def _is_read_like(event: ToolEvent) -> bool:
    command = event.arguments.get("command")
    if event.tool == "str_replace_editor" or "path" in event.arguments:
        return command in ("view", None)
    if not isinstance(command, str):
        return False
    for pipeline in parse_command(command) or []:
        words = program_words(pipeline[0].words)
        if not words or pipeline[-1].stdout_target() is not None:
            continue
        name, operands = words[0].text, [w for w in words[1:] if not w.text.startswith("-")]
        if name == "sed" and any(w.text.startswith("-n") for w in words[1:]) and len(operands) > 1:
            return True
        if name in _PRINTERS and operands and not pipeline[0].stdin_redirected():
            return True
    return False


def _outcome(event: ToolEvent, kind: str) -> str:
    if kind in ("read", "search"):
        return kind
    if any(marker in event.output for marker in _CUT):
        return "cut"
    if any(marker in event.output for marker in _FAILED):
        return "failed"
    return "missed"


def format_stats(by_source: dict[str, SourceStats]) -> str:
    """A plain-text table: call classes as shares, read-like outcomes as counts."""
    header = (
        f"{'source':<16}{'runs':>5}{'steps':>7}{'calls':>7}"
        + "".join(f"{name:>8}" for name in CLASSES)
        + " | read-like"
        + "".join(f"{name:>8}" for name in OUTCOMES)
        + " handled"
    )
    lines = [header]
    for source, stats in sorted(by_source.items()):
        total = stats.total_calls or 1
        shares = "".join(f"{100 * stats.calls[name] / total:>7.1f}%" for name in CLASSES)
        read_like = sum(stats.read_like.values())
        outcomes = "".join(f"{stats.read_like[name]:>8}" for name in OUTCOMES)
        handled = 100 * (read_like - stats.read_like["missed"]) / (read_like or 1)
        lines.append(
            f"{source:<16}{stats.trajectories:>5}{stats.steps:>7}{stats.total_calls:>7}{shares}"
            f" | {read_like:>9}{outcomes}{handled:>7.1f}%"
        )
    return "\n".join(lines)
