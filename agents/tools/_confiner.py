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
import ctypes
import fcntl
import ipaddress
import json
import os
import signal
import socket
import struct
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
ROUTES_SECONDS = 10  # for the sandbox's routes to be set
# rtnetlink and setns, from <linux/netlink.h>, <linux/rtnetlink.h>, <linux/nsfs.h>, <sched.h>.
RTM_NEWROUTE, NLMSG_ERROR, RTA_DST = 24, 2, 1
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 0x1, 0x4, 0x200, 0x400
RT_TABLE_MAIN, RTPROT_BOOT, RT_SCOPE_UNIVERSE, RTN_UNREACHABLE = 254, 3, 0, 7
NS_GET_USERNS, CLONE_NEWUSER, CLONE_NEWNET = 0xB701, 0x10000000, 0x40000000
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
    # The seccomp program's descriptor (bubblewrap's --seccomp), as the caller passed it.
    program = [int(command[i + 1]) for i, arg in enumerate(command[:separator]) if arg == "--seccomp"]
    child = subprocess.Popen(argv_bwrap, pass_fds=(info_w, block_r, GATE_FD, *program))
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
    net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    owner = None
    try:
        if os.fstat(net).st_ino == os.stat("/proc/self/ns/net").st_ino:
            raise Refused("the sandbox has no network namespace of its own")  # never touch the hub's
        if not spec.get("root"):
            # The user namespace that owns the network one: bubblewrap's first, not the
            # nested one its --disable-userns runs the command in (whose powers stop there).
            owner = fcntl.ioctl(net, NS_GET_USERNS)
        slirp = _slirp(net, spec, owner)
        try:
            # The machine's own addresses too: a service listening on all of them (0.0.0.0)
            # is the hub's, whatever range the address is in.
            own = subprocess.run([spec["ip"], "-o", "-4", "addr", "show"], capture_output=True, text=True,
                                 timeout=10).stdout
            hosts = {line.split()[3].split("/")[0] for line in own.splitlines() if len(line.split()) > 3}
            unreachable = [cidr for cidr in (*UNREACHABLE, *sorted(f"{h}/32" for h in hosts))
                           if cidr not in covered(hosts)]
            _in_namespace(net, owner, lambda: add_unreachable_routes(unreachable))
        except BaseException:
            _stop(slirp)
            raise
        return slirp
    finally:
        for fd in (net, owner):
            if fd is not None:
                os.close(fd)


def _slirp(net: int, spec: dict, owner: int | None) -> subprocess.Popen:
    """slirp4netns on the namespace checked, held open here (never found again by pid)."""
    fds = (net,) if owner is None else (net, owner)
    enter = [spec["nsenter"], f"--net=/proc/self/fd/{net}"]
    if owner is not None:
        enter[1:1] = [f"--user=/proc/self/fd/{owner}", "--preserve-credentials"]
    _wait_for_loopback(enter, spec["ip"], fds)
    ready_r, ready_w = os.pipe()
    exit_r, exit_w = os.pipe()
    os.set_inheritable(exit_w, False)
    namespace = [] if owner is None else ["--userns-path", f"/proc/self/fd/{owner}"]
    slirp = subprocess.Popen(
        [spec["slirp4netns"], "--configure", "--mtu", "65520", "--disable-host-loopback", "--ready-fd",
         str(ready_w), "--exit-fd", str(exit_r), *namespace, "--netns-type=path", f"/proc/self/fd/{net}", "tap0"],
        pass_fds=(ready_w, exit_r, *fds), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE)
    os.close(ready_w)
    os.close(exit_r)
    # exit_w stays open in this process only: slirp4netns ends when it closes (our exit).
    try:
        if os.read(ready_r, 1) != b"1":
            raise Refused(f"slirp4netns did not start: {_stderr(slirp)}")
    finally:
        os.close(ready_r)
    slirp.exit_w = exit_w  # type: ignore[attr-defined]  # kept open for the command's life
    return slirp


def _wait_for_loopback(enter: list[str], ip: str, fds: tuple[int, ...]) -> None:
    """bubblewrap brings up the namespace's loopback after it reported the sandbox: a
    second writer of the namespace's addresses before that makes bubblewrap fail."""
    deadline = time.monotonic() + 5
    while "127.0.0.1" not in subprocess.run([*enter, ip, "-4", "-o", "addr", "show", "dev", "lo"],
                                            capture_output=True, text=True, timeout=5, pass_fds=fds).stdout:
        if time.monotonic() > deadline:
            raise Refused("the sandbox's loopback did not come up")
        time.sleep(0.005)


def _in_namespace(net: int, owner: int | None, work) -> None:
    """Run ``work`` in a child that joined the sandbox's network namespace (through the
    user namespace that owns it, when the hub is not root). A child, not ``nsenter ip``:
    the powers a joined user namespace gives end at the next exec of an ordinary user.
    The child has ROUTES_SECONDS (its alarm ends it)."""
    error_r, error_w = os.pipe()
    child = os.fork()
    if child == 0:  # never returns: whatever happens, the child ends here
        try:
            os.close(error_r)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD_SIGNALS)
            signal.alarm(ROUTES_SECONDS)
            if owner is not None:
                _setns(owner, CLONE_NEWUSER)
            _setns(net, CLONE_NEWNET)
            work()
            os._exit(0)
        except BaseException as exc:
            with contextlib.suppress(BaseException):
                os.write(error_w, str(exc).encode()[:4000])
        finally:
            os._exit(1)
    os.close(error_w)
    with os.fdopen(error_r, "rb") as reader:
        error = reader.read().decode(errors="replace")
    _, status = os.waitpid(child, 0)
    if status:
        code = os.waitstatus_to_exitcode(status)
        raise Refused(f"the sandbox's routes could not be set: {error or f'status {code}'}")


def _setns(fd: int, kind: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, kind) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"setns: {os.strerror(number)}")


def add_unreachable_routes(cidrs: list[str]) -> None:
    """``ip route add unreachable <cidr>`` for each, over rtnetlink in this process."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as link:
        link.settimeout(ROUTES_SECONDS)
        for seq, cidr in enumerate(cidrs, 1):
            network = ipaddress.ip_network(cidr)
            route = struct.pack("=BBBBBBBBI", socket.AF_INET, network.prefixlen, 0, 0, RT_TABLE_MAIN, RTPROT_BOOT,
                                RT_SCOPE_UNIVERSE, RTN_UNREACHABLE, 0)
            route += struct.pack("=HH", 8, RTA_DST) + network.network_address.packed
            flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL
            link.send(struct.pack("=LHHLL", 16 + len(route), RTM_NEWROUTE, flags, seq, 0) + route)
            answer = link.recv(65536)
            kind, error = struct.unpack_from("=H", answer, 4)[0], struct.unpack_from("=i", answer, 16)[0]
            if kind != NLMSG_ERROR or error:
                raise OSError(-error, f"route unreachable {cidr}: {os.strerror(-error)}")


def covered(hosts: set[str]) -> set[str]:
    """Host routes already inside a listed range (the route would exist twice)."""
    ranges = [ipaddress.ip_network(cidr) for cidr in UNREACHABLE]
    return {f"{h}/32" for h in hosts if any(ipaddress.ip_address(h) in net for net in ranges)}


def _stderr(process: subprocess.Popen) -> str:
    _stop(process)
    return (process.stderr.read().decode(errors="replace").strip() if process.stderr else "") or "no output"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
