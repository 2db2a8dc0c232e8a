"""ToolBox: runs a session's tool calls in its worktree, each call id at most once.

Every text that leaves the box (outcomes, job reports, chat posts) passes ``clean_text``
once, here: command output and file names may hold NUL bytes and undecodable bytes,
which the session's storage (PostgreSQL text and jsonb) refuses.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from observations.gateway.messages import ToolCall, ToolSchema

from . import edits, files, memory, registry, room, search, shell
from .disk import check_worktree
from .jobs import JobRegistry, JobStatus
from .journaled_jobs import JobJournal, JournaledJobs
from .outcome import NotRun, Result, ToolError, ToolOutcome
from .paths import PathRefused
from .records import CallRecords
from .sandbox import Confined, Place, SandboxPolicy, interpreter_policy
from .schemas import TOOL_SCHEMAS, ArgumentError, check_arguments
from .shell import JobReport, ShellConfig
from .snapshots import SnapshotStore
from .text import clean_data, clean_text, one_line

# After these the worktree's disk is counted: what a command wrote may pass its limit.
_RUNS_COMMANDS = frozenset({"shell", "await"})


def _default_purpose(tool: str, values: Mapping[str, Any]) -> str:
    if tool == "shell":
        return f"shell: {one_line(str(values.get('command', '')))}"
    if tool == "search":
        return f"search /{one_line(str(values.get('pattern', '')), 60)}/"
    if tool == "undo_edit":
        return f"undo {values.get('call_id', '')}"
    if "path" in values:
        return f"{tool} {values['path']}"
    return tool


class ToolBox:
    """The tools of one session.

    ``state_dir`` (e.g. ``JOBS_DIR/<session id>``) holds the session's jobs, call
    records and undo snapshots; give the same directory to every process that runs
    the session. ``interrupted`` is polled while shell and await wait, and returns
    True when a steer or chat message for the session has arrived; ``pause`` passes the
    time between two looks (the worker's returns as soon as the session's doorbell
    rings, so a message is seen at once, not at the next look). ``allowed_tools``:
    the agent profile's tool permissions (empty or None: every tool). Commands run
    confined by ``sandbox`` (default: this interpreter's read-only, nothing else of the
    hub), with ``git_dir`` (the room repository's .git) read-only, the session's private
    temp under ``state_dir``, the network only if ``network``, in the control group
    ``group`` (the room's: its commands share its limits), as the room's own user
    ``uid`` when the hub is root (None: the sandbox policy's). ``post_message``
    posts to the room and may answer a note for the agent (whom its mentions reached);
    ``room_view`` is what room_status reads (agents/tools/room.py). With ``job_journal``
    the jobs are recorded there too, for every host (agents/tools/journaled_jobs.py).
    """

    def __init__(
        self,
        *,
        worktree: Path,
        state_dir: Path,
        yield_seconds: float = 45.0,
        post_message: Callable[[str], str | None] | None = None,
        interrupted: Callable[[], bool] | None = None,
        pause: Callable[[float], object] = time.sleep,
        allowed_tools: Iterable[str] | None = None,
        silence_limit_seconds: float = 900.0,
        sandbox: SandboxPolicy | None = None,
        git_dir: Path | None = None,
        network: bool = False,
        group: str = "",
        uid: int | None = None,
        session_memory: memory.SessionMemory | None = None,
        room_view: room.RoomView | None = None,
        job_journal: JobJournal | None = None,
    ) -> None:
        self.worktree = Path(worktree).resolve()
        self.state_dir = Path(state_dir).resolve()
        self.post_message = post_message
        self.interrupted, self.pause = interrupted, pause
        self.session_memory = session_memory
        self.room_view = room_view
        allowed = set(allowed_tools or ())
        self.allowed = frozenset(allowed) if allowed else frozenset(registry.WORK_TOOLS)
        self.jobs = (JobRegistry(self.state_dir / "jobs", silence_limit_seconds=silence_limit_seconds)
                     if job_journal is None else
                     JournaledJobs(self.state_dir / "jobs", job_journal, silence_limit_seconds=silence_limit_seconds))
        self.records = CallRecords(self.state_dir / "calls")
        self.snapshots = SnapshotStore(self.state_dir / "snapshots")
        place = Place(worktree=self.worktree, tmp=self.state_dir / "tmp", git_dir=git_dir,
                      network=network, group=group, uid=uid)
        self.shell_config = ShellConfig(place=place, sandbox=sandbox or interpreter_policy(),
                                        yield_seconds=yield_seconds, disk_paths=(self.worktree, self.state_dir))

    def schemas(self) -> tuple[ToolSchema, ...]:
        return tuple(s for s in TOOL_SCHEMAS if s.name in self.allowed)

    def execute(self, call: ToolCall) -> ToolOutcome:
        """Run ``call`` once; a call id seen before returns its recorded outcome instead."""
        if not call.id:
            raise ValueError("a tool call needs an id: it is what makes execution idempotent")
        recorded = self.records.outcome(call.id)
        if recorded is not None:
            return _replayed(recorded)
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        if call.name not in self.allowed:
            known = call.name in registry.BY_NAME
            reason = "is not available to this agent" if known else "does not exist"
            return self._settle(call.id, call.name, arguments, Result(
                text=f"Tool {call.name!r} {reason}. Available tools: "
                     f"{', '.join(sorted(self.allowed))}.", is_error=True, purpose=call.name))
        try:
            checked = check_arguments(call.name, call.arguments)
        except ArgumentError as exc:
            return self._settle(call.id, call.name, arguments, Result(
                text=f"Invalid arguments: {exc}.", is_error=True, purpose=call.name))
        values = checked.values
        if (self.records.started(call.id) and call.name not in registry.SIDE_EFFECT_FREE
                and not (call.name == "shell" and shell.never_ran(self.jobs, call.id))):
            return self._settle(call.id, call.name, values, self._unknown(call.id, call.name,
                                                                          values),
                                unknown=True)
        self.records.begin(call.id, call.name)
        started = time.monotonic()
        try:
            result = self._dispatch(call.id, call.name, values)
        except NotRun as exc:
            self.records.withdraw(call.id)  # it did nothing: it runs afresh once the fault is gone
            raise exc.fault from None
        except (ToolError, PathRefused) as exc:
            result = Result(text=str(exc), is_error=True)
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename else ""
            result = Result(text=f"{call.name} failed: {exc.strerror or exc}{where}",
                            is_error=True)
        if not result.purpose:
            result = _with_purpose(result, _default_purpose(call.name, values))
        if call.name in registry.PATH_TOOLS and result.path is not None:
            values = dict(values, path=result.path)
        outcome = self._settle(call.id, call.name, values, result,
                               duration_ms=int((time.monotonic() - started) * 1000))
        if call.name in _RUNS_COMMANDS:
            self.check_disk()
        return outcome

    def check_disk(self) -> None:
        """WorktreeFull if the session's files (its worktree, /tmp, jobs and their output)
        take more disk than their limit."""
        check_worktree(self.shell_config.counted, self.shell_config.sandbox.limits.worktree_bytes)

    def cannot_apply(self, call: ToolCall) -> str | None:
        """Why ``call`` would fail as things stand, changing nothing, for a call worth no
        person's approval (an edit whose old text is not in the file); None otherwise."""
        if call.name != "edit_file" or self.records.outcome(call.id) is not None:
            return None
        try:
            v = check_arguments(call.name, call.arguments).values
        except ArgumentError:
            return None  # execute says what is wrong with them
        return edits.edit_refusal(self.worktree, path=v["path"], old=v["old"], new=v["new"],
                                  replace_all=v["replace_all"])

    def skip(self, call: ToolCall, reason: str) -> ToolOutcome:
        """Settle ``call`` as not run (e.g. it came after a yielded shell in the same step)."""
        recorded = self.records.outcome(call.id)
        if recorded is not None:
            return _replayed(recorded)
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        return self._settle(call.id, call.name, arguments, Result(
            text=f"Not run: {reason}. Issue it again if it is still needed.", is_error=True,
            purpose=f"{call.name} (not run)"))

    def settle_jobs(self, token: str) -> tuple[JobReport, ...]:
        """Results of jobs that ended and were never delivered, claimed for ``token``.

        Call at the step boundary with a token unique to the step (e.g. ``"step-12"``);
        calling again with the same token (after a crash) returns the same reports.
        """
        reports = shell.settle_jobs(self.jobs, self.shell_config, token=token)
        return tuple(replace(report, text=clean_text(report.text)) for report in reports)

    def confine(self, command: str) -> Confined:
        """``command`` as the session's commands run (the room's check uses this too)."""
        return self.shell_config.confine(command)

    def job_statuses(self) -> tuple[JobStatus, ...]:
        return tuple(self.jobs.status(h) for h in self.jobs.handles())

    def cancel_jobs(self, reason: str = "the session was cancelled") -> tuple[JobStatus, ...]:
        """Stop every running job of the session (on cancel, time-out or the end)."""
        return self.jobs.cancel_running(reason)

    def _settle(self, call_id: str, tool: str, arguments: Mapping[str, Any], result: Result,
                *, unknown: bool = False, duration_ms: int = 0) -> ToolOutcome:
        outcome = ToolOutcome.from_result(
            call_id=call_id, tool=tool, arguments=dict(sorted(arguments.items())),
            result=result, duration_ms=duration_ms)
        if unknown:
            outcome = replace(outcome, outcome_unknown=True)
        outcome = _cleaned(outcome)
        self.records.finish(outcome)
        return outcome

    def _unknown(self, call_id: str, tool: str, values: Mapping[str, Any]) -> Result:
        if tool == "shell":
            return shell.shell_outcome_unknown(self.jobs, self.shell_config, call_id=call_id,
                                               command=values["command"])
        return Result(
            text="The outcome of this call is unknown: it started before the worker stopped "
                 "and left no record. It was not run again; check the current state (e.g. "
                 "read the file) before repeating it.",
            is_error=True, purpose=_default_purpose(tool, values),
            modified_files=tool in registry.WRITING)

    def _dispatch(self, call_id: str, tool: str, v: Mapping[str, Any]) -> Result:
        return EXECUTORS[tool](self, call_id, v)

    def _read_file(self, call_id: str, v: Mapping[str, Any]) -> Result:
        return files.read_file(self.worktree, path=v["path"], start=v["start"], end=v["end"])

    def _list_files(self, call_id: str, v: Mapping[str, Any]) -> Result:
        return files.list_files(self.worktree, path=v["path"], pattern=v["pattern"])

    def _search(self, call_id: str, v: Mapping[str, Any]) -> Result:
        return search.search(self.worktree, pattern=v["pattern"], path=v["path"], glob=v["glob"])

    def _write_file(self, call_id: str, v: Mapping[str, Any]) -> Result:
        return edits.write_file(self.worktree, self.snapshots, call_id=call_id, path=v["path"],
                                content=v["content"])

    def _edit_file(self, call_id: str, v: Mapping[str, Any]) -> Result:
        return edits.edit_file(self.worktree, self.snapshots, call_id=call_id, path=v["path"],
                               old=v["old"], new=v["new"], replace_all=v["replace_all"])

    def _undo_edit(self, call_id: str, v: Mapping[str, Any]) -> Result:
        return edits.undo_edit(self.worktree, self.snapshots, call_id=call_id,
                               target_call_id=v["call_id"])

    def _shell(self, call_id: str, v: Mapping[str, Any]) -> Result:
        return shell.run_shell(self.jobs, self.shell_config, call_id=call_id,
                               command=v["command"], timeout=v["timeout"],
                               interrupted=self.interrupted, pause=self.pause)

    def _await(self, call_id: str, v: Mapping[str, Any]) -> Result:
        return shell.run_await(self.jobs, self.shell_config, call_id=call_id,
                               handles=v["handles"], seconds=v["seconds"], stop=v["stop"],
                               interrupted=self.interrupted, pause=self.pause)

    def _post_message(self, call_id: str, v: Mapping[str, Any]) -> Result:
        if self.post_message is None:
            raise ToolError("post_message: this session has no room chat to post to")
        note = self.post_message(clean_text(v["text"]))
        return Result(text="Posted to the room chat." + (f"\n{note}" if note else ""), purpose="post message")

    def _room_status(self, call_id: str, v: Mapping[str, Any]) -> Result:
        if self.room_view is None:
            raise ToolError("room_status: this session has no room to look at")
        return room.room_status(self.room_view, call_id=call_id)

    def _review(self, call_id: str, v: Mapping[str, Any]) -> Result:
        # The end of the turn closes the round with the call's arguments (sessions/runtime/turn_end.py);
        # only a reviewer session's box has this tool.
        if v["decision"] not in ("approve", "request_changes"):
            raise ToolError("review: decision is approve or request_changes")
        said = "approved" if v["decision"] == "approve" else "changes requested"
        return Result(text=f"Review recorded: {said}.", purpose=f"review: {said}")

    def _memory(self, tool: str) -> memory.SessionMemory:
        if self.session_memory is None:
            raise ToolError(f"{tool}: this session keeps no records to look in")
        return self.session_memory

    def _recall(self, call_id: str, v: Mapping[str, Any]) -> Result:
        return memory.recall(self._memory("recall"), ref=v["ref"], start_line=v["start_line"],
                             end_line=v["end_line"])

    def _history_search(self, call_id: str, v: Mapping[str, Any]) -> Result:
        return memory.history_search(self._memory("history_search"), query=v["query"], limit=v["limit"])


# One executor per tool of agents.tools.registry (tests/agents/tools/test_registry.py).
EXECUTORS: dict[str, Callable[[ToolBox, str, Mapping[str, Any]], Result]] = {
    "read_file": ToolBox._read_file,
    "list_files": ToolBox._list_files,
    "search": ToolBox._search,
    "write_file": ToolBox._write_file,
    "edit_file": ToolBox._edit_file,
    "undo_edit": ToolBox._undo_edit,
    "shell": ToolBox._shell,
    "await": ToolBox._await,
    "post_message": ToolBox._post_message,
    "room_status": ToolBox._room_status,
    "recall": ToolBox._recall,
    "history_search": ToolBox._history_search,
    "review": ToolBox._review,
}


def _with_purpose(result: Result, purpose: str) -> Result:
    return replace(result, purpose=purpose)


def _cleaned(outcome: ToolOutcome) -> ToolOutcome:
    """The outcome with its texts storable; the call id, the caller's key, is left as is."""
    return replace(
        outcome, tool=clean_text(outcome.tool), arguments=clean_data(outcome.arguments),
        text=clean_text(outcome.text), purpose=clean_text(outcome.purpose),
        path=None if outcome.path is None else clean_text(outcome.path))


def _replayed(outcome: ToolOutcome) -> ToolOutcome:
    # Cleaned again: a record may predate the cleaning.
    return replace(_cleaned(outcome), replayed=True)
