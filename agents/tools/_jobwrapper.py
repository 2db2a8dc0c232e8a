"""Runs one job's command and records how it ended. Executed as a script, never imported.

Started by agents.tools.jobs in a session of its own, so it outlives the worker that
spawned it (SIGKILL included). It records its own pid and start time before the
command runs (how other processes tell it is still alive), sends the command's stdout
and stderr to ``output.log``, and publishes ``result.json`` with a hard link, which
fails if a result already exists: the first ending (exit, or cancel/dead declared by
the registry) wins, exactly once. While the command runs it touches ``heartbeat`` every
few seconds (how a process on another machine tells it is alive) and ends the command
if someone else recorded an ending (a cancel or a silence verdict from any machine).
Stdlib only: it must run without the project on ``sys.path``.
"""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time

KILL_GRACE_SECONDS = 5.0
HEARTBEAT_SECONDS = 5.0  # agents.tools.jobs judges a heartbeat stale well after this


def _publish(job_dir, name, data):
    final = os.path.join(job_dir, name)
    tmp = f"{final}.tmp-{os.getpid()}"
    with open(tmp, "w") as handle:
        json.dump(data, handle)
        handle.flush()
        os.fsync(handle.fileno())
    try:
        os.link(tmp, final)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)


def _start_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2 :].split()[19])


def _wait(child, job_dir, timeout):
    """The command's exit code; beats while it runs. TimeoutExpired at ``timeout``."""
    deadline = None if timeout is None else time.monotonic() + timeout
    beat = os.path.join(job_dir, "heartbeat")
    while True:
        with open(beat, "a"):
            os.utime(beat)
        if os.path.exists(os.path.join(job_dir, "result.json")):
            # Declared cancelled or dead elsewhere: that ending stands; stop the work.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            os.killpg(0, signal.SIGKILL)
        step = HEARTBEAT_SECONDS
        if deadline is not None:
            step = min(step, deadline - time.monotonic())
            if step <= 0:
                raise subprocess.TimeoutExpired(child.args, timeout)
        try:
            return child.wait(timeout=step)
        except subprocess.TimeoutExpired:
            continue


def main(job_dir):
    with open(os.path.join(job_dir, "spec.json")) as handle:
        spec = json.load(handle)
    pid = os.getpid()
    proc_tmp = os.path.join(job_dir, f"proc.json.tmp-{pid}")
    with open(proc_tmp, "w") as handle:
        json.dump({"pid": pid, "start_ticks": _start_ticks(pid), "host": socket.gethostname(),
                   "started_at": time.time()}, handle)
    os.replace(proc_tmp, os.path.join(job_dir, "proc.json"))

    with open(os.path.join(job_dir, "output.log"), "ab", buffering=0) as log:
        try:
            child = subprocess.Popen(
                spec["argv"],  # the command, confined (agents.tools.sandbox)
                cwd=spec["cwd"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        except OSError as exc:
            log.write(f"could not start the command: {exc}\n".encode())
            _publish(job_dir, "result.json",
                     {"state": "finished", "exit_code": 127, "ended_at": time.time()})
            return
        timed_out = False
        try:
            code = _wait(child, job_dir, spec.get("timeout"))
        except subprocess.TimeoutExpired:
            timed_out = True
            # Stay alive while the group is asked to stop, then make sure it has.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            os.killpg(0, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=KILL_GRACE_SECONDS)
            log.write(f"\n[killed: timeout of {spec['timeout']:g} s reached]\n".encode())
            code = 124
    if code < 0:  # killed by a signal: report it the way shells do
        code = 128 - code
    _publish(job_dir, "result.json", {
        "state": "finished", "exit_code": code, "timed_out": timed_out, "ended_at": time.time(),
    })
    # Background processes the command left behind die with it; long-running work is
    # what jobs are for. This also ends the wrapper itself.
    os.killpg(0, signal.SIGKILL)


if __name__ == "__main__":
    main(sys.argv[1])
