"""What a session owes for its jobs before it may end, and the waits it may not fake.

A job a session started is part of its work: the session cannot end (succeed, fail
its check, merge) while a job of its runs, or while a job's outcome was never read.
The first time the model answers "done" with a job running it is told, and must
`await` the job or stop it (`await` with `stop`); if it answers "done" again, the
session is held (parked) until those jobs end, and their outcomes reach the model at
the next step boundary. A shell command that only sleeps is refused: `await` waits
for jobs and for time, and returns early when a person writes.

Plain Python over plain data: the host says which jobs exist; nothing here runs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agents.tools.registry import SHELL_TOOLS
from observations.shell import read_line

# Commands that do no work: a line made only of these (and at least one sleep) waits.
_IDLE_PROGRAMS = frozenset({"sleep", "true", ":", "echo", "printf", "wait"})
# A held session is looked at again after this long even if its jobs run on.
HOLD_SECONDS = 3600.0


@dataclass(frozen=True, slots=True)
class JobView:
    """One job of the session as the host sees it now."""

    handle: str
    command: str
    running: bool
    unread: bool  # it ended and its outcome has not reached the model
    describe: str  # e.g. "still running after 3 min 2 s, last output 10.0 s ago"


@dataclass(frozen=True, slots=True)
class Verdict:
    """``end``: nothing open. ``settle``: only unread outcomes, which the next step
    boundary delivers. ``remind``: tell the model (``text``). ``hold``: park until the
    ``handles`` end."""

    action: Literal["end", "settle", "remind", "hold"]
    text: str = ""
    handles: tuple[str, ...] = ()


def before_ending(jobs: Sequence[JobView], *, reminded: Sequence[str]) -> Verdict:
    """May a session whose model just answered without tool calls end now?"""
    running = [job for job in jobs if job.running]
    unread = [job for job in jobs if not job.running and job.unread]
    if not running:
        return Verdict("settle", handles=tuple(j.handle for j in unread)) if unread else Verdict("end")
    handles = tuple(job.handle for job in running)
    if set(handles) <= set(reminded):
        return Verdict("hold", handles=handles)
    lines = [f"- job {job.handle} `{_short(job.command)}`: {job.describe}" for job in running]
    lines += [f"- job {job.handle} `{_short(job.command)}` ended; its result is delivered next" for job in unread]
    listed = ", ".join(f'"{h}"' for h in handles)
    text = ("You answered as if you were done, but jobs you started are still open:\n" + "\n".join(lines)
            + "\nA session cannot end while its jobs run or their results are unread. Collect them with "
            f"await(handles=[{listed}]), or end them with await(handles=[{listed}], stop=true) if they are "
            "no longer needed. If you answer without doing either, the session waits until they end.")
    return Verdict("remind", text=text, handles=handles)


def hold_note(handles: Sequence[str]) -> str:
    return (f"Held until job(s) {', '.join(handles)} end: the session cannot end while they run. "
            "Their results follow.")


def refusal(tool: str, arguments: object) -> str | None:
    """Why this call is refused before it runs, or None. Only a shell line made of
    nothing but sleeps (and no-ops: echo, true, :) is: it would hold a job slot and the
    worker to wait, without the early return `await` gives when a person writes."""
    if tool not in SHELL_TOOLS or not isinstance(arguments, dict) or not isinstance(arguments.get("command"), str):
        return None
    line = arguments["command"]
    read = read_line(line)
    if read.opaque or read.runs_code or not read.invocations or any(c in line for c in "<>"):
        return None  # it writes somewhere, or hides commands: it may do work
    # Wrappers count as programs of their own: `env sleep 3` is not caught (harmless).
    programs = [invocation.program for invocation in read.invocations]
    if "sleep" not in programs or not set(programs) <= _IDLE_PROGRAMS:
        return None
    return ("this command only sleeps. To wait for a job use await(handles=[...]); to wait for time, "
            "await(seconds=N). Both return early when a person writes to you, and your jobs' results "
            "are delivered to you when they end, so there is no need to poll")


def _short(command: str, limit: int = 80) -> str:
    line = " ".join(command.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
