"""Jobs any host can report: a session's jobs with their record, output and ending kept in
a journal (the database, sessions/worker/job_journal.py) as well as on the disk of the
machine that runs them.

The job itself still runs on one machine, from its folder there (agents.tools.jobs). Its
owner ships what it prints to the journal in blocks as it runs, with a beat (``ship``,
called every second or so by the worker's shipper and once more when it ends), so a host
that lacks the folder reads the journal instead: a job whose beat stopped is declared
lost there, with what it had printed, never left running. The journal's ending is the
one that stands, first writer wins: an ending declared on another host (a cancel, a
silence verdict) is brought to the job's folder, where its wrapper sees it and stops
the command.
"""

from __future__ import annotations

import contextlib
import fcntl
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .jobs import (
    NEVER_STARTED,
    JobRegistry,
    JobState,
    JobStatus,
    _duration,
    _publish_once,
    _read_json,
    kill_group,
)
from .text import read_bounded

BLOCK_BYTES = 64 << 10  # output is shipped and kept in blocks of this size
BLOCKS_PER_SHIPMENT = 64
LOST_AFTER_SECONDS = 30.0  # shipped beats come every second or so; this much silence is a lost owner
SETTLED = "settled.json"  # the ending the journal holds, copied into the job's folder


@dataclass(frozen=True, slots=True)
class JournalEntry:
    handle: str
    call_id: str
    command: str
    host: str
    created_at: float
    beat_age: float  # seconds since its owner last shipped (the journal's clock)
    output_bytes: int
    last_output_at: float | None
    ending: dict | None  # state, reason, ended_at, exit_code, timed_out: as result.json


class JobJournal(Protocol):
    """Where a session's jobs are recorded for every host. Endings and claims are first
    writer wins; ``suspect`` says for how long an observer has seen a job's beat stale
    (0 the first time, again once a beat came since), so a job is lost only after its
    silence was seen while the journal answered: a journal that was away for a while
    (a database restart) makes every beat old, and the owners' next beat clears them."""

    def open(self, handle: str, spec: dict, host: str) -> None: ...
    def entry(self, handle: str) -> JournalEntry | None: ...
    def handles(self) -> list[str]: ...
    def ship(self, handle: str, blocks: dict[int, bytes], output_bytes: int,
             last_output_at: float | None) -> None: ...
    def read(self, handle: str, start: int, length: int) -> bytes: ...
    def suspect(self, handle: str) -> float: ...
    def settle(self, handle: str, ending: dict) -> dict: ...
    def claim(self, handle: str, token: str) -> str: ...  # the token that holds it
    def delivered(self, handle: str) -> bool: ...
    def forget(self, handle: str) -> None: ...


class JournaledJobs(JobRegistry):
    """A JobRegistry whose jobs any host can report, through ``journal``."""

    def __init__(self, directory: Path, journal: JobJournal, *, lost_after_seconds: float = LOST_AFTER_SECONDS,
                 **kwargs) -> None:
        super().__init__(directory, **kwargs)
        self.journal = journal
        self.lost_after_seconds = lost_after_seconds
        # What never changes once known, so a step with jobs behind it asks the journal
        # nothing again: the session's handles (only its lease holder adds one, here),
        # who took each result, and how each ended on another machine.
        self._handles: list[str] | None = None
        self._holders: dict[str, str] = {}
        self._ended_elsewhere: dict[str, JobStatus] = {}
        self._mine: set[str] = set()  # folders here that are the journal's run

    def _recorded(self, handle: str, spec: dict) -> None:
        self.journal.open(handle, spec, socket.gethostname())
        if self._handles is not None:
            self._handles.append(handle)

    def _here(self, handle: str) -> bool:
        """Whether the job runs (or ran) from a folder here: a folder the journal holds
        another run for (the call was taken back and run again elsewhere) is not it."""
        if handle in self._mine:
            return True
        spec = _read_json(self._dir(handle) / "spec.json")
        if spec is None:
            return False
        entry = self.journal.entry(handle)
        if entry is not None and (entry.host, entry.created_at) != (socket.gethostname(), spec["created_at"]):
            return False
        self._mine.add(handle)
        return True

    def exists(self, handle: str) -> bool:
        """Whether the job runs (or ran) from a folder here."""
        return super().exists(handle) and self._here(handle)

    def handles(self) -> list[str]:
        if self._handles is None:
            recorded = self.journal.handles()
            # With any folder here the journal has no row for (a job started before it had).
            known = set(recorded)
            self._handles = recorded + [handle for handle in super().handles() if handle not in known]
        return list(self._handles)

    def status(self, handle: str) -> JobStatus:
        if not self._here(handle):
            return self._reported(handle)
        settled = _read_json(self._dir(handle) / SETTLED)
        if settled is not None:
            return _with_ending(super().status(handle), settled)
        local = super().status(handle)
        if local.done:
            return _with_ending(local, self._settle_here(handle))
        entry = self.journal.entry(handle)
        if entry is not None and entry.ending is not None:  # ended on another host: stop it here
            self._bring_ending_here(handle, entry.ending)
            return _with_ending(local, self._settle_here(handle))
        return local

    def _reported(self, handle: str) -> JobStatus:
        """A job of another host, as its journal tells."""
        if (ended := self._ended_elsewhere.get(handle)) is not None:
            return ended
        entry = self.journal.entry(handle)
        if entry is None:
            raise KeyError(handle)
        ending = entry.ending
        if ending is None and entry.beat_age > self.lost_after_seconds:
            if self.journal.suspect(handle) > self.lost_after_seconds:
                ending = self.journal.settle(handle, _ending(
                    "dead", f"lost: its worker on {entry.host} stopped reporting {_duration(entry.beat_age)} "
                    "ago (killed, or its machine is down); what it printed until then is kept"))
        elif ending is None and (quiet := time.time() - (entry.last_output_at or entry.created_at)) \
                > self.silence_limit_seconds:
            # Its owner sees the ending and kills the command.
            ending = self.journal.settle(handle, _ending(
                "dead", f"no output for {_duration(quiet)} (limit {_duration(self.silence_limit_seconds)}); "
                "its processes were killed"))
        status = JobStatus(handle=handle, call_id=entry.call_id, command=entry.command, state="running",
                           created_at=entry.created_at, output_bytes=entry.output_bytes,
                           last_output_at=entry.last_output_at)
        if ending is None:
            return status
        self._ended_elsewhere[handle] = _with_ending(status, ending)  # an ending never changes
        return self._ended_elsewhere[handle]

    def cancel(self, handle: str, reason: str = "cancelled") -> JobStatus:
        job_dir = self._dir(handle)
        if (job_dir / "spec.json").is_file() and not JobRegistry.status(self, handle).done:
            # Stopped here first, from its folder alone: the journal may be away.
            self._declare(job_dir, "cancelled", reason)
            if (proc := _read_json(job_dir / "proc.json")) is not None:
                kill_group(proc)
        if not self.status(handle).done:  # a job of another machine
            self.journal.settle(handle, _ending("cancelled", reason))
        return self.status(handle)

    def output(self, handle: str, max_chars: int) -> str:
        if self._here(handle):
            return super().output(handle, max_chars)
        entry = self.journal.entry(handle)
        if entry is None:
            raise KeyError(handle)
        return read_bounded(entry.output_bytes, lambda start, length: self.journal.read(handle, start, length),
                            max_chars)

    def claim(self, handle: str, token: str) -> bool:
        if handle not in self._holders:
            self._holders[handle] = self.journal.claim(handle, token)
        return self._holders[handle] == token

    def delivered(self, handle: str) -> bool:
        return handle in self._holders or self.journal.delivered(handle)

    def retract_unstarted(self, handle: str) -> bool:
        if self._here(handle):
            retracted = super().retract_unstarted(handle)
            if retracted:
                self.journal.forget(handle)
                self._forget_cached(handle)
            return retracted
        # Another machine's job: taken back only if it never started there either.
        entry = self.journal.entry(handle)
        if entry is None:
            return True
        if entry.ending is not None and str(entry.ending.get("reason", "")).startswith(NEVER_STARTED):
            self.journal.forget(handle)
            self._forget_cached(handle)
            return True
        return False

    def _forget_cached(self, handle: str) -> None:
        self._handles = None
        for cache in (self._holders, self._ended_elsewhere):
            cache.pop(handle, None)
        self._mine.discard(handle)

    def ship(self, handle: str) -> bool:
        """Ship what the job here printed since the last time, with a beat; once it has
        ended, its ending too. False once nothing is left to ship (it ended and was settled)."""
        job_dir = self._dir(handle)
        if (job_dir / SETTLED).exists() or not self._here(handle):
            return False
        if self.status(handle).done:  # settled, with the last of its output
            return False
        self._ship_output(handle)
        return True

    def _ship_output(self, handle: str) -> None:
        """Under the job's ship lock: one shipper at a time, so blocks only grow."""
        job_dir = self._dir(handle)
        with (job_dir / "ship.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            entry = self.journal.entry(handle)
            if entry is None:  # started before the journal had it
                self.journal.open(handle, _read_json(job_dir / "spec.json"), socket.gethostname())
                with contextlib.suppress(FileNotFoundError):  # and delivered then, maybe
                    self.journal.claim(handle, (job_dir / "delivered").read_text())
            shipped = entry.output_bytes if entry is not None else 0
            try:
                info = (job_dir / "output.log").stat()
            except FileNotFoundError:
                return
            size, last_output_at = info.st_size, info.st_mtime if info.st_size else None
            # Nothing new: a beat alone. A few MiB per statement, however much it printed.
            indexes = range(shipped // BLOCK_BYTES, -(-size // BLOCK_BYTES)) if size > shipped else range(0)
            with (job_dir / "output.log").open("rb") as source:
                for start in range(0, max(len(indexes), 1), BLOCKS_PER_SHIPMENT):
                    blocks = {}
                    for index in indexes[start:start + BLOCKS_PER_SHIPMENT]:
                        source.seek(index * BLOCK_BYTES)
                        blocks[index] = source.read(min(BLOCK_BYTES, size - index * BLOCK_BYTES))
                    upto = min(size, (indexes[start] + len(blocks)) * BLOCK_BYTES) if blocks else size
                    self.journal.ship(handle, blocks, upto, last_output_at)

    def _settle_here(self, handle: str) -> dict:
        """The ending recorded here, with the last of its output, made the journal's; the
        journal's own if another host's came first (then the job is stopped here)."""
        job_dir = self._dir(handle)
        self._ship_output(handle)
        local = _read_json(job_dir / "result.json") or {}
        standing = self.journal.settle(handle, local)
        if standing != local:
            self._bring_ending_here(handle, standing)
        _publish_once(job_dir / SETTLED, standing)
        return _read_json(job_dir / SETTLED) or standing

    def _bring_ending_here(self, handle: str, ending: dict) -> None:
        job_dir = self._dir(handle)
        _publish_once(job_dir / "result.json", ending)  # the wrapper sees it and stops the command
        proc = _read_json(job_dir / "proc.json")
        if proc is not None:
            kill_group(proc)


def _ending(state: JobState, reason: str) -> dict:
    return {"state": state, "reason": reason, "ended_at": time.time()}


def _with_ending(status: JobStatus, ending: dict) -> JobStatus:
    return JobStatus(
        handle=status.handle, call_id=status.call_id, command=status.command, state=ending["state"],
        created_at=status.created_at, ended_at=ending.get("ended_at"), exit_code=ending.get("exit_code"),
        timed_out=ending.get("timed_out", False), reason=ending.get("reason", ""),
        output_bytes=status.output_bytes, last_output_at=status.last_output_at)


def job_folders(jobs_dir: Path) -> list[tuple[int, str]]:
    """(session id, handle) of every job folder under ``jobs_dir`` not settled yet: what a
    worker that starts may have to ship, left by one that stopped."""
    found = []
    with contextlib.suppress(FileNotFoundError):
        for spec in jobs_dir.glob("*/jobs/*/spec.json"):
            session, handle = spec.parent.parent.parent.name, spec.parent.name
            if session.isdigit() and not (spec.parent / SETTLED).exists():
                found.append((int(session), handle))
    return sorted(found)

