"""shell and await: commands that give control back within a bound, and waiting on them."""

from __future__ import annotations

import errno
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .handover import prepare
from .jobs import JobRegistry, JobStatus
from .outcome import NotRun, Result, ToolError, out_of_space
from .sandbox import Confined, Place, SandboxPolicy, SandboxUnavailable, confine
from .text import one_line

RUNNING_TAIL_CHARS = 2000


def job_handle(call_id: str) -> str:
    """The handle of the job a shell call starts: derived from the call id, so a crash
    between starting the job and recording the outcome can still find it."""
    return "job-" + hashlib.sha256(call_id.encode()).hexdigest()[:10]


@dataclass(frozen=True, slots=True)
class ShellConfig:
    place: Place  # where the session's commands run
    sandbox: SandboxPolicy  # how they are confined there
    yield_seconds: float
    max_output_chars: int = 16_000
    # The session's files, counted against its disk limit while a command runs: the
    # worktree, and the folder of its /tmp, jobs and their output (the place's by default).
    disk_paths: tuple[Path, ...] = ()

    @property
    def counted(self) -> list[Path]:
        return list(self.disk_paths) or [self.place.worktree, self.place.tmp]

    @property
    def cwd(self) -> Path:
        return self.place.worktree

    def confine(self, command: str) -> Confined:
        """``command`` confined to the session's place; SandboxUnavailable if it cannot be."""
        prepare(self.sandbox, self.place)
        return confine(self.sandbox, self.place, command)


@dataclass(frozen=True, slots=True)
class JobReport:
    """A job's final result, handed to the model once (by await or at a step boundary)."""

    handle: str
    state: str
    exit_code: int | None
    text: str


def finished_text(registry: JobRegistry, status: JobStatus, max_chars: int) -> str:
    output = registry.output(status.handle, max_chars).rstrip("\n")
    return (f"job {status.handle} `{one_line(status.command, 120)}` {status.describe()}\n"
            + (output if output else "(no output)"))


def run_shell(registry: JobRegistry, config: ShellConfig, *, call_id: str, command: str,
              timeout: float | None, interrupted: Callable[[], bool] | None,
              pause: Callable[[float], object] = time.sleep) -> Result:
    handle = job_handle(call_id)
    purpose = f"shell: {one_line(command)}"
    try:
        confined = config.confine(command)
        registry.spawn(handle=handle, call_id=call_id, command=command, argv=confined.argv,
                       cwd=Path(confined.cwd), env=confined.env, timeout=timeout,
                       disk_limit=(config.counted, config.sandbox.limits.worktree_bytes),
                       output_max_bytes=config.sandbox.limits.output_bytes, seccomp=confined.seccomp)
        (status,), was_interrupted = registry.wait(
            [handle], seconds=config.yield_seconds, interrupted=interrupted, pause=pause)
    except SandboxUnavailable as exc:
        raise ToolError(str(exc)) from None
    except OSError as exc:  # the session's own files, on a full disk: nothing has run if it never started
        if out_of_space(exc) and registry.retract_unstarted(handle):
            raise NotRun(exc) from exc
        raise
    if registry.wrapper_ran_out_of_space(handle) and registry.retract_unstarted(handle):
        raise NotRun(OSError(errno.ENOSPC, "No space left on device", str(registry.directory)))
    if status.done:
        registry.claim(handle, call_id)
        output = registry.output(handle, config.max_output_chars).rstrip("\n")
        head = status.describe()
        if status.state == "finished":
            head = f"exit {status.exit_code} after {status.elapsed()}" + (
                f" (killed at its {timeout:g} s timeout)" if status.timed_out
                else f" ({status.reason})" if status.reason else "")
        return Result(text=head + "\n" + (output or "(no output)"), purpose=purpose,
                      modified_files=True, exit_code=status.exit_code)
    why = ("a message for you arrived" if was_interrupted
           else f"it outlasted the {config.yield_seconds:g} s wait bound")
    so_far = registry.output(handle, config.max_output_chars).rstrip("\n")
    text = (f"Still running ({why}); it continues as job {handle}. Collect its result with "
            f"await(handles=[\"{handle}\"]); if you do not, it is delivered when it finishes.\n"
            f"Output so far:\n{so_far or '(none yet)'}")
    return Result(text=text, purpose=purpose, job_handle=handle, pending_jobs=(handle,),
                  modified_files=True, interrupted=was_interrupted)


def never_ran(registry: JobRegistry, call_id: str) -> bool:
    """Whether a shell call that started before a crash never started its command (then
    its job, if any, is taken back, so the call can run afresh)."""
    return registry.retract_unstarted(job_handle(call_id))


def shell_outcome_unknown(registry: JobRegistry, config: ShellConfig, *, call_id: str,
                          command: str) -> Result:
    """Report, without re-running it, a shell call that started its job before a crash."""
    handle = job_handle(call_id)
    lead = ("The outcome of this call was not recorded (the worker stopped, or its disk was "
            "full, while it ran); the command was not run again. ")
    purpose = f"shell: {one_line(command)}"
    status = registry.status(handle)
    if status.done and registry.claim(handle, call_id):
        return Result(text=lead + "Its job had ended:\n" + finished_text(
            registry, status, config.max_output_chars), purpose=purpose, modified_files=True,
            exit_code=status.exit_code)
    if status.done:
        return Result(text=lead + f"Its job {handle} {status.describe()}; that result was "
                      "already delivered.", purpose=purpose, modified_files=True)
    return Result(text=lead + f"It runs on as job {handle} ({status.describe()}); collect it "
                  "with await.", purpose=purpose, job_handle=handle, pending_jobs=(handle,),
                  modified_files=True)


def run_await(registry: JobRegistry, config: ShellConfig, *, call_id: str,
              handles: list[str] | None, seconds: float | None,
              interrupted: Callable[[], bool] | None, stop: bool = False,
              pause: Callable[[float], object] = time.sleep) -> Result:
    known = registry.handles()
    if handles is None:
        targets = [h for h in known if not registry.delivered(h)]
    else:
        unknown = [h for h in handles if h not in known]
        if unknown:
            listed = ", ".join(known[-10:]) or "none"
            raise ToolError(f"await: unknown job handle(s) {', '.join(unknown)}; "
                            f"this session's jobs: {listed}")
        targets = list(dict.fromkeys(handles))
    if stop:
        return _stop_jobs(registry, config, call_id=call_id, targets=targets)
    bound = config.yield_seconds if seconds is None else min(seconds, config.yield_seconds)
    capped = seconds is not None and seconds > config.yield_seconds
    purpose = "await " + (", ".join(targets) if targets else f"{bound:g} s" if seconds is not None
                          else "(nothing to wait for)")
    if not targets:
        if seconds is None:
            return Result(text="No unfinished jobs to wait for.", purpose=purpose)
        was_interrupted = _sleep(bound, interrupted, pause)
        waited = "Returned early: a message for you arrived." if was_interrupted else (
            f"Waited {bound:g} s" + (" (the most one call waits)." if capped else "."))
        return Result(text=waited, purpose=purpose, interrupted=was_interrupted)
    statuses, was_interrupted = registry.wait(targets, seconds=bound, interrupted=interrupted, pause=pause)
    parts: list[str] = []
    if was_interrupted:
        parts.append("Returned early: a message for you arrived.")
    running = [s for s in statuses if not s.done]
    for status in statuses:
        if not status.done:
            tail = registry.output(status.handle, RUNNING_TAIL_CHARS).rstrip("\n")
            parts.append(f"job {status.handle} {status.describe()}"
                         + (f"; latest output:\n{tail}" if tail else ""))
        elif registry.claim(status.handle, call_id):
            parts.append(finished_text(registry, status, config.max_output_chars))
        else:
            parts.append(f"job {status.handle} {status.describe()}; its result was already "
                         "delivered earlier.")
    if running and not was_interrupted:
        parts.append(f"{len(running)} job(s) still running after {bound:g} s; await again "
                     "to keep waiting.")
    return Result(text="\n\n".join(parts), purpose=purpose,
                  pending_jobs=tuple(s.handle for s in running), interrupted=was_interrupted)


def _stop_jobs(registry: JobRegistry, config: ShellConfig, *, call_id: str, targets: list[str]) -> Result:
    """await with stop: end the jobs and hand over what they wrote, each result once."""
    purpose = "stop " + (", ".join(targets) if targets else "(nothing running)")
    if not targets:
        return Result(text="No unfinished jobs to stop.", purpose=purpose)
    parts = []
    for handle in targets:
        status = registry.cancel(handle, "stopped by the agent")
        if registry.claim(handle, call_id):
            parts.append(finished_text(registry, status, config.max_output_chars))
        else:
            parts.append(f"job {handle} {status.describe()}; its result was already delivered earlier.")
    return Result(text="\n\n".join(parts), purpose=purpose)


def _sleep(seconds: float, interrupted: Callable[[], bool] | None,
           pause: Callable[[float], object] = time.sleep, poll_seconds: float = 0.1) -> bool:
    deadline = time.monotonic() + seconds
    while (remaining := deadline - time.monotonic()) > 0:
        if interrupted is not None and interrupted():
            return True
        pause(min(poll_seconds, remaining))
    return False


def settle_jobs(registry: JobRegistry, config: ShellConfig, *, token: str) -> tuple[JobReport, ...]:
    """Claim (with ``token``) every ended job whose result nobody delivered yet."""
    reports = []
    for handle in registry.handles():
        status = registry.status(handle)
        if status.done and registry.claim(handle, token):
            reports.append(JobReport(handle=handle, state=status.state,
                                     exit_code=status.exit_code,
                                     text=finished_text(registry, status,
                                                        config.max_output_chars)))
    return tuple(reports)
