"""One `manage.py start` per data folder, and what an earlier one left running.

The supervisor holds an flock on the data folder for its life (the kernel frees it
however the supervisor dies), so a second `start` is refused even while the first is
still migrating, before it has written any report.

Its children die with the supervisor where setpriv can set the parent-death signal; where
it cannot (util-linux before 2.33), a supervisor killed outright leaves them running: a
worker still running its session, a Redis holding the socket. The supervisor's report
names each process by pid and start time, so the next `start` can tell a supervisor that
still runs (refuse: a hub runs here) from children it left behind (stop them, then come
up), and never signals a stranger that was given a recorded pid since."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from hub.supervision import REPORT_NAME, STOP_GRACE_SECONDS, process_start

LOCK_NAME = "supervisor.lock"


def claim_data_folder(data_dir: Path) -> IO[str] | None:
    """The data folder's supervisor lock, to keep open while the hub runs; None while
    another `start` holds it."""
    lock = (Path(data_dir) / LOCK_NAME).open("a")  # not inherited: children never hold it
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        return None
    return lock


@dataclass(frozen=True)
class Left:
    name: str
    pid: int
    start: int

    @property
    def running(self) -> bool:
        return process_start(self.pid) == self.start


@dataclass(frozen=True)
class EarlierRun:
    supervisor: int | None = None  # pid of a supervisor that still runs on this folder
    left: list[Left] = field(default_factory=list)  # children it left running


def earlier_run(data_dir: Path) -> EarlierRun:
    try:
        report = json.loads((Path(data_dir) / REPORT_NAME).read_text())
    except (OSError, ValueError):
        return EarlierRun()
    if not isinstance(report, dict):
        return EarlierRun()
    if (supervisor := _recorded(report)) is not None and supervisor.running:
        return EarlierRun(supervisor=supervisor.pid)
    children = report.get("children")
    recorded = [_recorded(child) for child in children] if isinstance(children, list) else []
    return EarlierRun(left=[child for child in recorded if child is not None and child.running])


def stop_left(left: list[Left], grace_seconds: float = STOP_GRACE_SECONDS) -> None:
    """Stop them as a stop does: SIGTERM to each (Redis after the rest), then SIGKILL to
    the process group of what outlasts ``grace_seconds`` (each was started in a session
    of its own, so a worker's pool goes with it)."""
    for wave in ([p for p in left if p.name != "redis"], [p for p in left if p.name == "redis"]):
        for process in wave:
            if process.running:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_seconds
        while any(p.running for p in wave) and time.monotonic() < deadline:
            time.sleep(0.1)
        for process in wave:  # what is left of its group too (a worker's pool outliving it)
            if process.running or process_start(process.pid) is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)


def _recorded(entry: object) -> Left | None:
    """A report's entry as a process, if it names one (a pid and its start time)."""
    if not isinstance(entry, dict):
        return None
    pid, start = entry.get("pid"), entry.get("start")
    return Left(str(entry.get("name")), pid, start) if isinstance(pid, int) and isinstance(start, int) else None
