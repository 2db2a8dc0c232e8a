"""What one tool call produced: the text for the model and the metadata the gateway stores."""

from __future__ import annotations

import errno
from dataclasses import asdict, dataclass, field, fields
from typing import Any

NO_SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


class ToolError(Exception):
    """A tool refused or failed in a way the model can act on; becomes an error result."""


class NotRun(Exception):
    """The call changed nothing: the hub's disk was full before it could (``fault``).
    It is not settled: the fault goes up for the session to wait out, and the call runs
    afresh once there is space, rather than being reported to the model as failed."""

    def __init__(self, fault: OSError) -> None:
        super().__init__(str(fault))
        self.fault = fault


def out_of_space(error: OSError) -> bool:
    return error.errno in NO_SPACE_ERRNOS


@dataclass(frozen=True, slots=True)
class Result:
    """A tool function's answer before the executor attaches the call's identity."""

    text: str
    is_error: bool = False
    purpose: str = ""
    path: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    file_sha256: str | None = None
    range_sha256: str | None = None
    job_handle: str | None = None
    pending_jobs: tuple[str, ...] = ()
    modified_files: bool = False
    # A shell or await that returned early because a message for the session arrived.
    interrupted: bool = False
    # A shell command that ended: its exit code.
    exit_code: int | None = None


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The settled result of one call, keyed by the provider's call id.

    ``file_sha256`` is the whole file's content hash: for reads, the file as read; for
    writes, edits and undos, the file as left. ``range_sha256`` hashes the exact bytes of
    lines ``line_start``..``line_end`` that a read returned. ``job_handle`` is set when a
    shell command outlasted the wait bound and runs on as a job (the step ends there).
    ``pending_jobs`` lists jobs an ``await`` left unfinished. ``modified_files`` is True
    for successful writes, edits, undos and every shell command (which may write
    anything). ``exit_code``: a shell command's, once it ended. ``outcome_unknown`` marks a call that started before a crash and left no
    record: it was not run again. ``replayed`` marks an outcome served from the record.
    """

    call_id: str
    tool: str
    arguments: dict[str, Any]
    text: str
    is_error: bool = False
    purpose: str = ""
    path: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    file_sha256: str | None = None
    range_sha256: str | None = None
    job_handle: str | None = None
    pending_jobs: tuple[str, ...] = ()
    modified_files: bool = False
    interrupted: bool = False
    exit_code: int | None = None
    outcome_unknown: bool = False
    replayed: bool = False
    # Wall-clock duration of the execution that produced this outcome.
    duration_ms: int = field(default=0, compare=False)

    @property
    def yielded(self) -> bool:
        return self.job_handle is not None

    @classmethod
    def from_result(
        cls, *, call_id: str, tool: str, arguments: dict[str, Any], result: Result,
        duration_ms: int = 0,
    ) -> ToolOutcome:
        return cls(call_id=call_id, tool=tool, arguments=arguments, duration_ms=duration_ms,
                   **{f.name: getattr(result, f.name) for f in fields(Result)})

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["pending_jobs"] = list(self.pending_jobs)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolOutcome:
        known = {f.name for f in fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        values["pending_jobs"] = tuple(values.get("pending_jobs", ()))
        return cls(**values)
