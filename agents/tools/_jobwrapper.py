"""Runs one job's command and records how it ended. Executed as a script (its disk count is
also imported by agents.tools.disk).

Started by agents.tools.jobs in a session of its own, so it outlives the worker that
spawned it (SIGKILL included). It records its own pid and start time before the
command runs (how other processes tell it is still alive), sends the command's stdout
and stderr to ``output.log``, and publishes ``result.json`` with a hard link, which
fails if a result already exists: the first ending (exit, or cancel/dead declared by
the registry) wins, exactly once. The command writes into a pipe, never into a file of
the hub's: the wrapper copies what it writes into ``output.log`` up to a bound
(``spec["output_max_bytes"]``) and drops the rest (a descriptor of the hub's disk held
in the sandbox could reserve any amount of it, unseen, with fallocate). While the command runs it touches ``heartbeat`` every
few seconds (how a process on another machine tells it is alive) and ends the command
if someone else recorded an ending (a cancel or a silence verdict from any machine), or
once the session's folders take more of the disk than their limit (``spec["disk"]``: a
room's command is stopped before it fills the machine's disk for the other rooms).
Stdlib only: it must run without the project on ``sys.path``.
"""

import base64
import contextlib
import errno
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

KILL_GRACE_SECONDS = 5.0
HEARTBEAT_SECONDS = 5.0  # agents.tools.jobs judges a heartbeat stale well after this
DISK_CHECK_SECONDS = 1.0
DISK_CHECK_MAX_SECONDS = 15.0  # however large the tree, counted at least this often
DU_TIMEOUT_SECONDS = 10.0  # the heartbeat waits while du counts
UNCOUNTABLE = 1 << 62
EXIT_OVER_DISK = 125
EXIT_NO_SPACE = 75  # EX_TEMPFAIL: the disk was full before the command started, so it never ran
DEFAULT_OUTPUT_MAX_BYTES = 32 << 20
# Where a confined command line names the descriptor of its seccomp program (bubblewrap's
# --seccomp): each process that starts it puts the program on a descriptor of its own.
SECCOMP_FD = "{seccomp-fd}"
COPY_DRAIN_SECONDS = 2.0  # after the command ends, what is still in the pipe


class OverDisk(Exception):
    """The worktree passed its disk limit while the command ran."""


def disk_usage(paths, *, timeout=DU_TIMEOUT_SECONDS):
    """Bytes the trees at ``paths`` take on their disk, together (a hard link once):
    ``du`` never follows a link, opens no file and stays on one filesystem, so a hostile
    tree can neither redirect nor hold it. None if it could not tell in time (the hub's
    own check, after the command, takes that as past the limit). A folder it
    may not read (made so by the command, where the sandbox's user is the hub's) counts
    as past any limit: what cannot be counted is not let through. Also imported by
    agents.tools.disk, the hub's own check."""
    try:
        done = subprocess.run(["du", "-s", "-x", "-c", "-B1", "--", *paths], capture_output=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    if b"Permission denied" in done.stderr:
        return UNCOUNTABLE
    # The total: printed even when entries vanished mid-walk (exit 1).
    last = done.stdout.splitlines()[-1:]
    first = last[0].split(None, 1)[:1] if last else []
    return int(first[0]) if first and first[0].isdigit() else None


def program_descriptor(program):
    """A descriptor holding ``program`` from its start, numbered 10 or more (clear of the
    descriptors the confiner sets up), for bubblewrap's --seccomp. Also used by the hub."""
    memfd = os.memfd_create("atrium-seccomp", os.MFD_CLOEXEC)
    try:
        view = memoryview(program)
        while view:
            view = view[os.write(memfd, view):]
        fd = fcntl.fcntl(memfd, fcntl.F_DUPFD_CLOEXEC, 10)
    finally:
        os.close(memfd)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def copy_capped(source, log, max_bytes):
    """Copy what a command writes to ``source`` (its pipe) into ``log``, up to ``max_bytes``
    in all; past that it is read and dropped, so the command never blocks on a full pipe,
    and the log says once that it was. Also used for the room's check."""
    kept, dropped = 0, False
    try:
        while chunk := os.read(source, 1 << 16):
            room = max_bytes - kept
            if room > 0:
                log.write(chunk[:room])
                kept += min(room, len(chunk))
            if len(chunk) > room and not dropped:
                dropped = True
                log.write(f"\n[output past {size_text(max_bytes)} was not kept]\n".encode())
    except ValueError:  # the log was closed: a process holding the pipe outlived the wait for it
        pass
    finally:
        os.close(source)


def _copying(child, log, max_bytes):
    """A thread copying ``child``'s output into ``log`` (copy_capped)."""
    thread = threading.Thread(target=copy_capped, args=(os.dup(child.stdout.fileno()), log, max_bytes), daemon=True)
    child.stdout.close()
    thread.start()
    return thread


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


def _wait(child, job_dir, timeout, disk):
    """The command's exit code; beats while it runs. TimeoutExpired at ``timeout``,
    OverDisk once ``disk["paths"]`` take more than ``disk["max_bytes"]``."""
    deadline = None if timeout is None else time.monotonic() + timeout
    beat = os.path.join(job_dir, "heartbeat")
    next_beat = next_disk = 0.0
    while True:
        now = time.monotonic()
        if now >= next_beat:
            next_beat = now + HEARTBEAT_SECONDS
            with open(beat, "a"):
                os.utime(beat)
            if os.path.exists(os.path.join(job_dir, "result.json")):
                # Declared cancelled or dead elsewhere: that ending stands; stop the work.
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                os.killpg(0, signal.SIGKILL)
        if disk and now >= next_disk:
            used = disk_usage(disk["paths"])
            if used is not None and used > disk["max_bytes"]:
                raise OverDisk(used)
            # A tenth of a core on counting, up to a count every 15 s for a tree that takes long.
            next_disk = time.monotonic() + min(DISK_CHECK_MAX_SECONDS,
                                               max(DISK_CHECK_SECONDS, 10 * (time.monotonic() - now)))
        wake = min(next_beat, next_disk) if disk else next_beat
        if deadline is not None:
            if deadline <= now:
                raise subprocess.TimeoutExpired(child.args, timeout)
            wake = min(wake, deadline)
        try:
            return child.wait(timeout=max(0.01, wake - time.monotonic()))
        except subprocess.TimeoutExpired:
            continue


def _stop(child, *, at_once=False):
    """Stay alive while the group is asked to stop, then make sure it has. ``at_once``:
    the command's own process (bubblewrap or its confiner: the sandbox dies with either;
    a room group the confiner leaves is swept by a later command) is killed first."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if at_once:
        child.kill()
    os.killpg(0, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=KILL_GRACE_SECONDS)


def size_text(count):
    if count >= UNCOUNTABLE:
        return "more than could be counted (a folder it may not read)"
    return f"{count / (1 << 30):.1f} GB" if count >= 1 << 30 else f"{count / (1 << 20):.0f} MB"


def main(job_dir):
    with open(os.path.join(job_dir, "spec.json")) as handle:
        spec = json.load(handle)
    pid = os.getpid()
    proc_tmp = os.path.join(job_dir, f"proc.json.tmp-{pid}")
    try:
        with open(proc_tmp, "w") as handle:
            json.dump({"pid": pid, "start_ticks": _start_ticks(pid), "host": socket.gethostname(),
                       "started_at": time.time()}, handle)
        os.replace(proc_tmp, os.path.join(job_dir, "proc.json"))
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(proc_tmp)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            sys.exit(EXIT_NO_SPACE)
        raise
    if os.path.exists(os.path.join(job_dir, "result.json")):
        return  # declared dead while it was starting (agents.tools.jobs): the command never runs

    argv, pass_fds = spec["argv"], ()
    if spec.get("seccomp"):
        fd = program_descriptor(base64.b64decode(spec["seccomp"]))
        argv, pass_fds = [str(fd) if arg == SECCOMP_FD else arg for arg in argv], (fd,)
    with open(os.path.join(job_dir, "output.log"), "ab", buffering=0) as log:
        try:
            child = subprocess.Popen(
                argv,  # the command, confined (agents.tools.sandbox)
                cwd=spec["cwd"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=pass_fds,
            )
        except OSError as exc:
            log.write(f"could not start the command: {exc}\n".encode())
            _publish(job_dir, "result.json",
                     {"state": "finished", "exit_code": 127, "ended_at": time.time()})
            return
        copying = _copying(child, log, spec.get("output_max_bytes", DEFAULT_OUTPUT_MAX_BYTES))
        timed_out, reason = False, ""
        try:
            code = _wait(child, job_dir, spec.get("timeout"), spec.get("disk"))
        except subprocess.TimeoutExpired:
            timed_out = True
            _stop(child)
            log.write(f"\n[killed: timeout of {spec['timeout']:g} s reached]\n".encode())
            code = 124
        except OverDisk as over:
            _stop(child, at_once=True)  # every second of grace is more of the disk
            reason = (f"stopped: the session's files took {size_text(over.args[0])} of disk, past the "
                      f"room's limit of {size_text(spec['disk']['max_bytes'])}")
            log.write(f"\n[{reason}]\n".encode())
            code = EXIT_OVER_DISK
        copying.join(COPY_DRAIN_SECONDS)  # what the command wrote last; a process it left may hold the pipe
    if code < 0:  # killed by a signal: report it the way shells do
        code = 128 - code
    _publish(job_dir, "result.json", {
        "state": "finished", "exit_code": code, "timed_out": timed_out, "reason": reason, "ended_at": time.time(),
    })
    # Background processes the command left behind die with it; long-running work is
    # what jobs are for. This also ends the wrapper itself.
    os.killpg(0, signal.SIGKILL)


if __name__ == "__main__":
    main(sys.argv[1])
