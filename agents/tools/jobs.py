"""Managed jobs: shell commands that outlive the call (and the worker) that started them.

Everything about a job lives in its directory under the session's jobs dir, so any
process can answer "running, finished or dead?" later:

- ``spec.json``    what to run (written before the process starts)
- ``proc.json``    the wrapper's pid and kernel start time (written by the wrapper)
- ``output.log``   stdout and stderr, interleaved
- ``heartbeat``    touched by the wrapper every few seconds while the command runs
- ``result.json``  how it ended; created once (hard link), first writer wins
- ``delivered``    which token (a call id or a step boundary) handed the result to the
                   model; created once, so a result is delivered exactly once
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from ._jobwrapper import EXIT_NO_SPACE
from .text import read_log_bounded

WRAPPER = Path(__file__).with_name("_jobwrapper.py")

JobState = Literal["running", "finished", "dead", "cancelled"]
# The wrapper beats every 5 s; a job on another machine whose beat is this old is dead.
HEARTBEAT_STALE_SECONDS = 30.0
LOOK_SECONDS_MAX = 1.0
NEVER_STARTED = "its process never started"


def look_interval(waited: float, *, least: float = 0.1) -> float:
    """How long to pause before looking at a job again, after ``waited`` seconds: a tenth
    of the wait so far (between ``least`` and a second). A job's end is noticed at most
    10% late, and the sessions that wait on long jobs all day cost little between looks."""
    return min(LOOK_SECONDS_MAX, max(least, waited / 10))


@dataclass(frozen=True, slots=True)
class JobStatus:
    handle: str
    call_id: str
    command: str
    state: JobState
    created_at: float
    ended_at: float | None = None
    exit_code: int | None = None
    timed_out: bool = False
    reason: str = ""  # why a job is dead or cancelled
    output_bytes: int = 0
    last_output_at: float | None = None  # None: no output yet

    @property
    def done(self) -> bool:
        return self.state != "running"

    def elapsed(self, now: float | None = None) -> str:
        end = self.ended_at if self.ended_at is not None else (now or time.time())
        return _duration(end - self.created_at)

    def describe(self, now: float | None = None) -> str:
        """One line for the model: state, exit code, how long it ran."""
        end = self.ended_at if self.ended_at is not None else (now or time.time())
        took = self.elapsed(now)
        if self.state == "finished":
            extra = " (killed at its timeout)" if self.timed_out else f" ({self.reason})" if self.reason else ""
            return f"finished: exit {self.exit_code} after {took}{extra}"
        if self.state == "running":
            quiet = ", no output yet"
            if self.last_output_at is not None:
                quiet = f", last output {_duration(end - self.last_output_at)} ago"
            return f"still running after {took}{quiet}"
        return f"{self.state} after {took}: {self.reason}"


def _duration(seconds: float) -> str:
    seconds = max(seconds, 0.0)
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} min {rest} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return None


def _publish_once(path: Path, data: dict) -> None:
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}-{time.monotonic_ns()}")
    try:
        tmp.write_text(json.dumps(data))
        os.link(tmp, path)
    except FileExistsError:
        pass  # another ending was recorded first; it stands
    finally:
        tmp.unlink(missing_ok=True)


def _on_this_host(proc: Mapping) -> bool:
    return proc.get("host", socket.gethostname()) == socket.gethostname()


def _process_alive(proc: Mapping) -> bool:
    """Whether the recorded wrapper still runs (same pid *and* same kernel start time).

    Only answerable on the machine that runs it; callers check ``_on_this_host`` first.
    """
    pid = int(proc["pid"])
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no procfs: fall back to signal 0 (pid reuse cannot be ruled out)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):  # exited, not yet reaped
        return False
    ticks = proc.get("start_ticks")
    return ticks is None or int(fields[19]) == int(ticks)


def kill_group(proc: Mapping) -> None:
    """Kill a job's processes if its wrapper (``proc``: its proc.json) verifiably runs here."""
    if _on_this_host(proc) and _process_alive(proc):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(proc["pid"]), signal.SIGKILL)


class JobRegistry:
    """The jobs of one session, as recorded on disk; safe to use from several processes."""

    def __init__(self, directory: Path, *, silence_limit_seconds: float = 900.0,
                 start_grace_seconds: float = 30.0) -> None:
        self.directory = Path(os.path.abspath(directory))
        self.silence_limit_seconds = silence_limit_seconds
        self.start_grace_seconds = start_grace_seconds
        # Wrappers this process started, so they are reaped rather than left as zombies,
        # and how those that ended did.
        self._children: dict[str, subprocess.Popen] = {}
        self._exits: dict[str, int] = {}

    def _dir(self, handle: str) -> Path:
        if not handle or "/" in handle or handle.startswith("."):
            raise KeyError(handle)
        return self.directory / handle

    def exists(self, handle: str) -> bool:
        try:
            return (self._dir(handle) / "spec.json").is_file()
        except KeyError:
            return False

    def handles(self) -> list[str]:
        """Every job of the session, oldest first."""
        if not self.directory.is_dir():
            return []
        specs = [(p.stat().st_mtime, p.parent.name) for p in self.directory.glob("*/spec.json")]
        return [name for _, name in sorted(specs)]

    def spawn(self, *, handle: str, call_id: str, command: str, argv: list[str], cwd: Path,
              env: Mapping[str, str], timeout: float | None = None,
              disk_limit: tuple[list[Path], int] | None = None, output_max_bytes: int | None = None,
              seccomp: bytes = b"") -> JobStatus:
        """Start ``argv`` (``command`` confined: see agents.tools.sandbox) as a job.

        ``env`` is the whole environment of the wrapper and the command: the wrapper
        never holds more than the command may see. With ``disk_limit`` (folders, bytes)
        the command is stopped once those folders take more bytes of disk than that; of its
        output, ``output_max_bytes`` are kept (the wrapper's default otherwise).
        """
        job_dir = self._dir(handle)
        self.directory.mkdir(parents=True, exist_ok=True)
        job_dir.mkdir()  # FileExistsError: the handle is taken; never start twice
        spec = {"handle": handle, "call_id": call_id, "command": command, "argv": list(argv),
                "cwd": os.path.abspath(cwd), "timeout": timeout, "created_at": time.time()}
        if output_max_bytes is not None:
            spec["output_max_bytes"] = output_max_bytes
        if seccomp:
            spec["seccomp"] = base64.b64encode(seccomp).decode()  # the wrapper loads it for bubblewrap
        if disk_limit is not None:
            spec["disk"] = {"paths": [os.path.abspath(path) for path in disk_limit[0]], "max_bytes": disk_limit[1]}
        try:
            (job_dir / "spec.json").write_text(json.dumps(spec))
            (job_dir / "output.log").touch()
            self._recorded(handle, spec)
        except BaseException:
            shutil.rmtree(job_dir, ignore_errors=True)  # half a job: none at all, the handle free again
            raise
        # The wrapper's own complaints (if it cannot even start) go to wrapper.log.
        with (job_dir / "wrapper.log").open("wb") as wrapper_log:
            try:
                self._children[handle] = self._start_wrapper(job_dir, cwd, env, wrapper_log)
            except OSError as exc:
                # Settled here, and claimed by the call that reports the failure.
                self._declare(job_dir, "dead", f"could not be started: {exc}")
                self.claim(handle, call_id)
                raise
        return self.status(handle)

    def _recorded(self, handle: str, spec: dict) -> None:
        """Called once a job's spec is on disk, before its command starts (journaled_jobs.py)."""

    @staticmethod
    def _start_wrapper(job_dir: Path, cwd: Path, env: Mapping[str, str],
                       wrapper_log: BinaryIO) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-I", str(WRAPPER), str(job_dir)],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=wrapper_log,
            stderr=subprocess.STDOUT,
            close_fds=True,
            start_new_session=True,  # own session: survives the worker and its signals
        )

    def retract_unstarted(self, handle: str) -> bool:
        """Remove the job if its command never ran (it was never spawned, or its wrapper
        ended, or was declared dead, before it recorded its process: the wrapper then
        never starts the command), so the call that made it can run afresh. False, and
        the job kept, if the command may have run."""
        job_dir = self._dir(handle)
        if self._wrapper_running(handle):
            return False
        result = _read_json(job_dir / "result.json") or {}
        unstarted = (not (job_dir / "spec.json").exists()
                     or str(result.get("reason", "")).startswith(NEVER_STARTED)
                     or (handle in self._exits and not (job_dir / "proc.json").exists()))
        if unstarted:
            shutil.rmtree(job_dir, ignore_errors=True)
            self._exits.pop(handle, None)
        return unstarted and not job_dir.exists()

    def wrapper_ran_out_of_space(self, handle: str) -> bool:
        """Whether the job's wrapper, started here, found the disk full before its command started."""
        return not self._wrapper_running(handle) and self._exits.get(handle) == EXIT_NO_SPACE

    def _wrapper_running(self, handle: str) -> bool:
        """Whether a wrapper this process started for ``handle`` still runs (one that
        ended is reaped, and how it ended kept)."""
        child = self._children.get(handle)
        if child is None:
            return False
        if child.poll() is None:
            return True
        self._exits[handle] = self._children.pop(handle).returncode
        return False

    def status(self, handle: str) -> JobStatus:
        job_dir = self._dir(handle)
        spec = _read_json(job_dir / "spec.json")
        if spec is None:
            raise KeyError(handle)
        self._wrapper_running(handle)  # reaped, and its exit kept, once it ends
        try:
            log_info = (job_dir / "output.log").stat()
            output_bytes, log_mtime = log_info.st_size, log_info.st_mtime
        except FileNotFoundError:
            output_bytes, log_mtime = 0, spec["created_at"]
        last_output = log_mtime if output_bytes else None
        result = _read_json(job_dir / "result.json")
        if result is None:
            result = self._judge_unfinished(job_dir, spec, log_mtime, wrapper_exit=self._exits.get(handle))
        if result is None:
            return JobStatus(handle=handle, call_id=spec["call_id"], command=spec["command"],
                             state="running", created_at=spec["created_at"],
                             output_bytes=output_bytes, last_output_at=last_output)
        return JobStatus(
            handle=handle, call_id=spec["call_id"], command=spec["command"],
            state=result["state"], created_at=spec["created_at"], ended_at=result["ended_at"],
            exit_code=result.get("exit_code"), timed_out=result.get("timed_out", False),
            reason=result.get("reason", ""), output_bytes=output_bytes,
            last_output_at=last_output,
        )

    def _judge_unfinished(self, job_dir: Path, spec: dict, last_activity: float, *,
                          wrapper_exit: int | None) -> dict | None:
        """Decide whether a job without a result is still running; record it dead if not.
        ``wrapper_exit``: how its wrapper ended, if this process started it."""
        now = time.time()
        proc = _read_json(job_dir / "proc.json")
        if proc is None:
            if wrapper_exit is None and now - spec["created_at"] < self.start_grace_seconds:
                return None  # the wrapper is still starting
            full = " (the disk was full)" if wrapper_exit == EXIT_NO_SPACE else ""
            return self._declare(job_dir, "dead", NEVER_STARTED + full)
        # A job on another machine cannot be probed from here: its heartbeat file and its
        # silence in the shared log tell instead.
        local = _on_this_host(proc)
        if not local and (beat := _mtime(job_dir / "heartbeat")) is not None \
                and now - beat > HEARTBEAT_STALE_SECONDS:
            return self._declare(job_dir, "dead", f"its process stopped reporting {_duration(now - beat)} ago "
                                 f"(on {proc.get('host')}: killed, or the machine is down)")
        if not local or _process_alive(proc):
            quiet = now - last_activity
            if quiet <= self.silence_limit_seconds:
                return None
            result = self._declare(
                job_dir, "dead", f"no output for {_duration(quiet)} (limit "
                f"{_duration(self.silence_limit_seconds)}); its processes were killed")
            kill_group(proc)
            return result
        return self._declare(job_dir, "dead", "its process is gone without an exit code "
                             "(killed, or the machine restarted)")

    def _declare(self, job_dir: Path, state: JobState, reason: str) -> dict:
        _publish_once(job_dir / "result.json", {"state": state, "reason": reason,
                                                "ended_at": time.time()})
        # If the wrapper published its exit first, that result stands.
        return _read_json(job_dir / "result.json") or {}

    def cancel_running(self, reason: str) -> tuple[JobStatus, ...]:
        """Stop every job still running (a session cancelled, timed out or ended)."""
        return tuple(self.cancel(h, reason) for h in self.handles() if not self.status(h).done)

    def cancel(self, handle: str, reason: str = "cancelled") -> JobStatus:
        """Stop a running job and record it cancelled; a job already ended keeps its result."""
        job_dir = self._dir(handle)
        if self.status(handle).done:
            return self.status(handle)
        self._declare(job_dir, "cancelled", reason)
        proc = _read_json(job_dir / "proc.json")
        if proc is not None:
            kill_group(proc)
        return self.status(handle)

    def output(self, handle: str, max_chars: int) -> str:
        return read_log_bounded(self._dir(handle) / "output.log", max_chars)

    def claim(self, handle: str, token: str) -> bool:
        """Take the right to deliver this job's result; True if ``token`` holds it.

        Claiming again with the same token answers True, so a step boundary or an await
        that is re-run after a crash re-delivers what it had claimed, and nothing else.
        """
        marker = self._dir(handle) / "delivered"
        # Written aside and linked into place, so the marker never exists without its token.
        tmp = marker.with_name(f"delivered.tmp-{os.getpid()}-{time.monotonic_ns()}")
        try:
            tmp.write_text(token)
            os.link(tmp, marker)
        except FileExistsError:
            return marker.read_text() == token
        finally:
            tmp.unlink(missing_ok=True)
        return True

    def delivered(self, handle: str) -> bool:
        return (self._dir(handle) / "delivered").exists()

    def wait(self, handles: Iterable[str], *, seconds: float,
             interrupted: Callable[[], bool] | None = None,
             pause: Callable[[float], object] = time.sleep,
             poll_seconds: float = 0.1) -> tuple[list[JobStatus], bool]:
        """Wait until every job has ended, ``seconds`` pass, or ``interrupted()`` says so.

        Returns the statuses and whether the wait was cut short by ``interrupted``.
        ``pause`` passes the time between two looks; it may return early (see ToolBox).
        """
        wanted = list(handles)
        started = time.monotonic()
        deadline = started + seconds
        while True:
            statuses = [self.status(h) for h in wanted]
            if all(s.done for s in statuses):
                return statuses, False
            if interrupted is not None and interrupted():
                return statuses, True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return statuses, False
            pause(min(look_interval(time.monotonic() - started, least=poll_seconds), remaining))
