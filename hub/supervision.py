"""Keep the hub's processes running: start them, restart one that exits, report on them.

`manage.py start` hands its children (embedded Redis, Daphne, the Celery worker, beat)
to a `Supervisor`. A child that exits while the hub is not stopping is started again
after a backoff (1 s, doubling up to 30 s, back to 1 s once it has stayed up for a
minute), and every exit and restart is logged. The supervisor writes what it sees to
``supervisor.json`` in the data folder, which `/healthz` reads (any process of the hub
may answer it). Plain Python, no Django: testable with throwaway children.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("atrium.supervisor")

REPORT_NAME = "supervisor.json"
MIN_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 30.0
STABLE_AFTER_SECONDS = 60.0  # up this long: the next crash starts the backoff anew
REPORT_EVERY_SECONDS = 2.0
# A report older than this means the supervisor itself is gone.
REPORT_STALE_SECONDS = 15.0
STOP_GRACE_SECONDS = 15.0


@dataclass
class Child:
    """One supervised process. ``start`` returns it running (and ready, if it waits)."""

    name: str
    start: Callable[[], subprocess.Popen]
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    restarts: int = 0
    backoff: float = MIN_BACKOFF_SECONDS
    restart_at: float | None = None  # set while it waits to be started again
    last_exit: str = ""
    last_recovery_seconds: float | None = None  # exit seen → running again
    exited_at: float | None = None
    process_start: int | None = None  # with the pid, names this process (hub.leftovers)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def as_dict(self) -> dict:
        return {
            "name": self.name, "pid": self.process.pid if self.running else None, "running": self.running,
            "start": self.process_start if self.running else None,
            "restarts": self.restarts, "last_exit": self.last_exit,
            "last_recovery_seconds": self.last_recovery_seconds,
            "restart_in_seconds": None if self.restart_at is None else max(0.0, self.restart_at - time.time()),
        }


@dataclass
class Supervisor:
    children: list[Child]
    report_path: Path
    clock: Callable[[], float] = time.time
    min_backoff: float = MIN_BACKOFF_SECONDS
    max_backoff: float = MAX_BACKOFF_SECONDS
    _stopping: bool = field(default=False, init=False)
    _reported_at: float = field(default=0.0, init=False)
    _report_failing: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        for child in self.children:
            child.backoff = self.min_backoff

    def start_all(self, names: list[str] | None = None) -> None:
        """Start the children (or those named) that were never started."""
        for child in self.children:
            if child.process is None and child.restart_at is None and (names is None or child.name in names):
                self._start(child)
        self.report(force=True)

    def request_stop(self) -> None:
        self._stopping = True

    @property
    def stopping(self) -> bool:
        return self._stopping

    def run(self, poll_seconds: float = 0.2) -> None:
        """Watch the children until request_stop() (e.g. from a signal handler)."""
        while not self._stopping:
            self.tick()
            time.sleep(poll_seconds)

    def tick(self) -> None:
        """Notice exits, restart what is due, refresh the report."""
        now = self.clock()
        changed = False
        for child in self.children:
            if child.restart_at is None and child.process is not None and child.process.poll() is not None:
                self._exited(child, now)
                changed = True
            if child.restart_at is not None and now >= child.restart_at and not self._stopping:
                self._start(child)
                changed = True
        self.report(force=changed)

    def _exited(self, child: Child, now: float) -> None:
        code = child.process.returncode
        child.last_exit = f"exited with {_describe_exit(code)}"
        # What it left behind (a Celery worker's pool processes) ends with it: its
        # replacement starts clean, and a session those held is resumed elsewhere.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.process.pid, signal.SIGKILL)
        if now - child.started_at >= STABLE_AFTER_SECONDS:
            child.backoff = self.min_backoff
        child.exited_at = now
        child.restart_at = now + child.backoff
        log.warning("%s (pid %s) %s; restarting in %g s", child.name, child.process.pid, child.last_exit,
                    child.backoff)
        child.backoff = min(child.backoff * 2, self.max_backoff)

    def _start(self, child: Child) -> None:
        restarting = child.process is not None
        try:
            child.process = child.start()
        except Exception as exc:  # cannot start now (e.g. a port still taken): try again later
            child.process = None
            child.last_exit = f"could not start: {exc}"
            child.restart_at = self.clock() + child.backoff
            log.error("%s could not start: %s; trying again in %g s", child.name, exc, child.backoff)
            child.backoff = min(child.backoff * 2, self.max_backoff)
            return
        child.started_at = self.clock()
        child.process_start = process_start(child.process.pid)
        child.restart_at = None
        if restarting or child.exited_at is not None:
            child.restarts += 1
            if child.exited_at is not None:
                child.last_recovery_seconds = round(child.started_at - child.exited_at, 2)
            log.warning("%s restarted (pid %s, restart #%d)", child.name, child.process.pid, child.restarts)

    def report(self, *, force: bool = False) -> None:
        now = self.clock()
        if not force and now - self._reported_at < REPORT_EVERY_SECONDS:
            return
        self._reported_at = now
        data = {"pid": os.getpid(), "start": process_start(os.getpid()), "updated_at": now, "children": [c.as_dict() for c in self.children]}
        tmp = self.report_path.with_name(f"{self.report_path.name}.tmp-{os.getpid()}")
        # Best effort: a full disk (or any failed write) must not stop the supervisor, and
        # with it the hub. /healthz reads a stale report as such; the next tick tries again.
        try:
            tmp.write_text(json.dumps(data))
            os.replace(tmp, self.report_path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            if not self._report_failing:
                log.error("the supervisor's report could not be written (%s); retrying", exc)
            self._report_failing = True
            self._reported_at = 0.0  # again at the next tick
        else:
            if self._report_failing:
                log.warning("the supervisor's report is written again")
            self._report_failing = False

    def stop_all(self, order: list[str] | None = None) -> None:
        """Stop every child: SIGTERM in ``order`` (default: last started first), then
        SIGKILL to the process groups of those that outlast the grace period."""
        self._stopping = True
        by_name = {c.name: c for c in self.children}
        ordered = [by_name[n] for n in order] if order else list(reversed(self.children))
        for group in _waves(ordered):
            for child in group:
                if child.running:
                    child.process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + STOP_GRACE_SECONDS
            for child in group:
                if child.process is None:
                    continue
                try:
                    child.process.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(child.process.pid, signal.SIGKILL)
                    child.process.wait()
        self.report_path.unlink(missing_ok=True)


def process_start(pid: int) -> int | None:
    """When the kernel started ``pid`` (clock ticks since boot), None if it is not running:
    with the pid it names one process, never a later one that was given the same pid."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else int(fields[19])


def _waves(children: list[Child]) -> list[list[Child]]:
    """Everything but the last child stops together; the last one (Redis) after them."""
    return [children[:-1], children[-1:]] if len(children) > 1 else [children]


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "no exit code"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-code).name}"
        return f"signal {-code}"
    return f"code {code}"


@dataclass(frozen=True)
class Report:
    ok: bool
    detail: str


def read_report(data_dir: Path, *, now: float | None = None) -> Report | None:
    """What the supervisor last wrote, or None when no supervisor runs on this folder."""
    try:
        data = json.loads((Path(data_dir) / REPORT_NAME).read_text())
    except (FileNotFoundError, ValueError):
        return None
    age = (now or time.time()) - float(data.get("updated_at", 0))
    if age > REPORT_STALE_SECONDS:
        return Report(False, f"the supervisor (pid {data.get('pid')}) has not reported for {age:.0f} s")
    parts, ok = [], True
    for child in data.get("children", []):
        ok = ok and child["running"]
        state = f"up (pid {child['pid']})" if child["running"] else "down"
        if child["restart_in_seconds"] is not None:
            state += f", restarting in {child['restart_in_seconds']:.0f} s"
        if child["restarts"]:
            state += f", restarted {child['restarts']}×, last {child['last_exit']}"
            if child["last_recovery_seconds"] is not None:
                state += f", back after {child['last_recovery_seconds']:g} s"
        parts.append(f"{child['name']} {state}")
    return Report(ok, "; ".join(parts))
