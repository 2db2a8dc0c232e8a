"""Starts one bubblewrap sandbox with what bubblewrap cannot set up alone: the room's
control groups and, when the room allows the network, a network of its own.

Run as ``python -I -S _confiner.py SPEC bwrap ARGS...`` (agents.tools.sandbox builds the
line; stdlib only, no Django, nothing of the hub imported). bubblewrap is started with
``--info-fd`` (it reports the sandbox's first process) and ``--block-fd`` (it waits
before running the command), and while it waits:

- the first process goes into a fresh control group under the room's, whose
  ``pids``, ``memory`` and ``cpu`` limits the room's commands share (cgroup v1
  controllers or v2), so one room's fork bomb or memory hog stops at its own limits;
- for the network, ``slirp4netns`` gives the sandbox's namespace a user-mode NAT with
  the host's loopback turned off, and routes inside it make loopback, link-local and
  private ranges unreachable: the sandbox reaches the internet, not the hub's
  PostgreSQL, Redis or Daphne, nor anything else on the machine's private networks.

Then the command runs; this process waits for bubblewrap and exits with its status,
ending slirp4netns and removing the command's control group. If anything cannot be set
up, the command never runs: the reason goes to stderr and the exit status is 126.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import subprocess
import sys
import time

CANNOT_CONFINE = 126
# What a sandbox with the network on can never reach (its own loopback aside).
UNREACHABLE = (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4",
    "240.0.0.0/4",
)
STALE_SECONDS = 60
_V1_FILES = {"pids": ("pids.max",), "memory": ("memory.limit_in_bytes",), "cpu": ("cpu.cfs_period_us", "cpu.cfs_quota_us")}


class Refused(RuntimeError):
    pass


GATE_FD = 9  # inside the sandbox: where the command's gate reads "go"
# The first program inside the sandbox: it runs the command only once the confiner said
# "go" on the gate. If the confiner dies or gives up first, the gate reads end of file
# and nothing runs (bubblewrap's own --block-fd takes end of file for a go).
GATE = [
    "/bin/sh", "-c",
    f'read -r word <&{GATE_FD}; exec {GATE_FD}<&-; [ "$word" = go ] || exit {CANNOT_CONFINE}; exec "$@"',
    "atrium-gate",
]
_HELD_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def main(argv: list[str]) -> int:
    spec, command = json.loads(argv[1]), argv[2:]
    # A stop that arrives while the sandbox is being set up waits until it is (or is not).
    signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)
    info_r, info_w = os.pipe()
    block_r, block_w = os.pipe()
    gate_r, gate_w = os.pipe()
    os.dup2(gate_r, GATE_FD)
    os.close(gate_r)
    separator = command.index("--")  # bubblewrap's options, then the command it runs
    argv_bwrap = [command[0], "--info-fd", str(info_w), "--block-fd", str(block_r), *command[1:separator + 1],
                  *GATE, *command[separator + 1:]]
    child = subprocess.Popen(argv_bwrap, pass_fds=(info_w, block_r, GATE_FD))
    for fd in (info_w, block_r, GATE_FD):
        os.close(fd)
    groups: list[str] = []
    slirp = None
    pid = 0
    try:
        pid = _sandbox_pid(info_r)
        if spec.get("cgroup"):
            groups = join_groups(pid, **spec["cgroup"])
        if spec.get("network"):
            slirp = _network(pid, spec)
        os.write(block_w, b"1")
        os.write(gate_w, b"go\n")
    except BaseException as exc:
        print(f"atrium: the sandbox could not be set up: {exc!r}", file=sys.stderr, flush=True)
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _stop(child)
        if slirp is not None:
            _stop(slirp)
        for group in groups:
            _remove_group(group)
        return CANNOT_CONFINE
    finally:
        for fd in (info_r, block_w, gate_w):
            os.close(fd)
    try:
        return _wait(child)
    finally:
        if slirp is not None:
            _stop(slirp)
        for group in groups:
            _remove_group(group)


def _sandbox_pid(info_r: int) -> int:
    data = b""
    while b"}" not in data:
        chunk = os.read(info_r, 4096)
        if not chunk:
            raise Refused("bubblewrap ended before the sandbox started")
        data += chunk
    return int(json.loads(data[: data.index(b"}") + 1])["child-pid"])


def _wait(child: subprocess.Popen) -> int:
    # A stop or a timeout signals this process: pass it on, then wait as bubblewrap ends.
    for signum in _HELD_SIGNALS:
        signal.signal(signum, lambda number, _frame: child.send_signal(number))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD_SIGNALS)
    code = child.wait()
    return code if code >= 0 else 128 - code


def _stop(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    process.wait()


# --- control groups -------------------------------------------------------------------------


def join_groups(pid: int, *, root: str, group: str, name: str, processes: int, memory_bytes: int,
                cpu_quota_us: int, cpu_period_us: int = 100_000) -> list[str]:
    """Put ``pid`` in ``<group>/<name>`` under each controller (the limits are the
    group's, so every command of the room shares them); the folders made."""
    values = {"pids.max": str(processes), "memory.limit_in_bytes": str(memory_bytes), "memory.max": str(memory_bytes),
              "cpu.cfs_period_us": str(cpu_period_us), "cpu.cfs_quota_us": str(cpu_quota_us),
              "cpu.max": f"{cpu_quota_us} {cpu_period_us}"}
    if os.path.exists(os.path.join(root, "cgroup.controllers")):  # v2: one tree
        trees = {"": ("pids.max", "memory.max", "cpu.max")}
        _enable_v2_controllers(root, group)
    else:
        trees = dict(_V1_FILES)
    made = []
    for controller, files in trees.items():
        base = room_group(root, controller, group)
        _sweep_stale(base)
        for attempt in range(2):  # another room's command may have swept this room's empty group just now
            try:
                os.makedirs(base, exist_ok=True)
                for file in files:
                    _write(os.path.join(base, file), values[file])
                mine = os.path.join(base, name)
                os.mkdir(mine)
                break
            except FileNotFoundError:
                if attempt:
                    raise
        made.append(mine)
        _write(os.path.join(mine, "cgroup.procs"), str(pid))
    return made


def room_group(root: str, controller: str, group: str) -> str:
    """The room's group under a v1 controller: nested in the hub's own group there (a
    service's or a container's limits still hold for its sandboxes); under v2, the
    machine's ``atrium`` group (a populated group cannot delegate controllers)."""
    if not controller:
        return os.path.join(root, "atrium", group)
    own = "/"
    with contextlib.suppress(OSError), open("/proc/self/cgroup") as lines:
        for line in lines:
            _number, names, path = line.rstrip("\n").split(":", 2)
            if controller in names.split(","):
                own = path
    return os.path.join(root, controller, own.lstrip("/"), "atrium", group)


def _enable_v2_controllers(root: str, group: str) -> None:
    """v2 limits apply only where the parents delegate the controllers to their children."""
    path = os.path.join(root, "atrium")  # the root delegates them already (cgroups_usable checks)
    os.makedirs(path, exist_ok=True)
    for part in (group,):
        _write(os.path.join(path, "cgroup.subtree_control"), "+pids +memory +cpu")
        path = os.path.join(path, part)
        os.makedirs(path, exist_ok=True)


def _write(path: str, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)


def _sweep_stale(base: str) -> None:
    """Groups of commands whose confiner was killed before it could remove them, and the
    empty groups of other rooms (rooms come and go); only ones a minute old (another
    command may have just made its own). A group still in use is busy: never removed."""
    for folder in (base, os.path.dirname(base)):
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                if (entry.path != base and entry.is_dir(follow_symlinks=False)
                        and time.time() - entry.stat().st_ctime > STALE_SECONDS):
                    with contextlib.suppress(OSError):
                        os.rmdir(entry.path)


def _remove_group(path: str) -> None:
    """The sandbox's last processes may take a moment to leave it; one still busy after
    that is removed by a later command of the room (`_sweep_stale`)."""
    for _ in range(20):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


# --- the network -----------------------------------------------------------------------------


def _network(pid: int, spec: dict) -> subprocess.Popen:
    if os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat("/proc/self/ns/net").st_ino:
        raise Refused("the sandbox has no network namespace of its own")  # never touch the hub's
    enter = [spec["nsenter"], "-t", str(pid), "-n"]
    if not spec.get("root"):
        enter[3:3] = ["-U", "--preserve-credentials"]
    _wait_for_loopback(enter, spec["ip"])
    ready_r, ready_w = os.pipe()
    exit_r, exit_w = os.pipe()
    os.set_inheritable(exit_w, False)
    namespace = ["--userns-path", f"/proc/{pid}/ns/user"] if not spec.get("root") else []
    slirp = subprocess.Popen(
        [spec["slirp4netns"], "--configure", "--mtu", "65520", "--disable-host-loopback", "--ready-fd",
         str(ready_w), "--exit-fd", str(exit_r), *namespace, str(pid), "tap0"],
        pass_fds=(ready_w, exit_r), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.close(ready_w)
    os.close(exit_r)
    # exit_w stays open in this process only: slirp4netns ends when it closes (our exit).
    try:
        if os.read(ready_r, 1) != b"1":
            raise Refused(f"slirp4netns did not start: {_stderr(slirp)}")
    finally:
        os.close(ready_r)
    # The machine's own addresses too: a service listening on all of them (0.0.0.0) is
    # the hub's, whatever range the address is in.
    own = subprocess.run([spec["ip"], "-o", "-4", "addr", "show"], capture_output=True, text=True, timeout=10).stdout
    hosts = {line.split()[3].split("/")[0] for line in own.splitlines() if len(line.split()) > 3}
    script = "".join(f"route add unreachable {cidr}\n" for cidr in (*UNREACHABLE, *sorted(f"{h}/32" for h in hosts))
                     if cidr not in covered(hosts))
    done = subprocess.run([*enter, spec["ip"], "-batch", "-"], input=script.encode(), capture_output=True, timeout=10)
    if done.returncode != 0:
        _stop(slirp)
        raise Refused(f"the sandbox's routes could not be set: {done.stderr.decode(errors='replace').strip()}")
    slirp.exit_w = exit_w  # type: ignore[attr-defined]  # kept open for the command's life
    return slirp


def _wait_for_loopback(enter: list[str], ip: str) -> None:
    """bubblewrap brings up the namespace's loopback after it reported the sandbox: a
    second writer of the namespace's addresses before that makes bubblewrap fail."""
    deadline = time.monotonic() + 5
    while "127.0.0.1" not in subprocess.run([*enter, ip, "-4", "-o", "addr", "show", "dev", "lo"],
                                            capture_output=True, text=True, timeout=5).stdout:
        if time.monotonic() > deadline:
            raise Refused("the sandbox's loopback did not come up")
        time.sleep(0.005)


def covered(hosts: set[str]) -> set[str]:
    """Host routes already inside a listed range (the route would exist twice)."""
    ranges = [ipaddress.ip_network(cidr) for cidr in UNREACHABLE]
    return {f"{h}/32" for h in hosts if any(ipaddress.ip_address(h) in net for net in ranges)}


def _stderr(process: subprocess.Popen) -> str:
    _stop(process)
    return (process.stderr.read().decode(errors="replace").strip() if process.stderr else "") or "no output"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
