"""Where every command of a room runs: the one place its confinement is built.

Agent shell calls, background jobs and the room's check all run the command line that
`confine` returns, with the environment it returns, under bubblewrap (``bwrap``):

- a fresh root holding the system's programs and libraries read-only (``/usr``,
  ``/bin``, ``/lib*``, ``/etc``), the interpreter the hub ships read-only (its prefix,
  not the hub's checkout), the session's worktree writable (its ``.git`` pointer
  read-only), the room repository's git data read-only and a private ``/tmp`` that
  lives as long as the session; nothing else of the machine: not the hub's data
  folder, database, other rooms or worktrees, nor the hub's own packages;
- its own pid, ipc, uts and cgroup namespaces (no other process and no other
  ``/proc/<pid>/environ`` is visible) and no network unless the room allows it;
- an unprivileged user: when the hub runs as root, a user of the room's own on the
  machine (bubblewrap mounts as root, then ``setpriv`` drops to it before the command
  runs; its per-user limits and files are the room's alone), named ``agent`` in the
  sandbox's passwd; a hub that is not root runs bubblewrap in a user namespace of its
  own, uid 65534 inside;
- an environment built from an allowlist, never the worker's;
- ``prlimit`` limits: CPU seconds, address space, processes, file size (so output too)
  and open files.

Where no sandbox can be made, `confine` raises `SandboxUnavailable` with a message that
says how to enable one; only an operator's explicit opt-out (``ATRIUM_SANDBOX=off``)
runs commands unconfined, still with the allowlisted environment. No Django import:
settings arrive as a `SandboxPolicy`.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from agents.tools import seccomp
from agents.tools._confiner import room_group
from agents.tools._jobwrapper import SECCOMP_FD, program_descriptor
from agents.tools.handover import mount_points_in_tmp, prepare
from agents.tools.mounts import Mounts

SANDBOX_UID = 65534  # "nobody": the user commands run as inside the sandbox
CONFINER = Path(__file__).with_name("_confiner.py")
# The per-user process limit counts every room's commands together when the hub is root;
# where each room has a control group, its pids limit bounds the room instead, and the
# per-user one stays at the hub's own (the dropped user cannot raise it past that).
ROOM_BOUND_NPROC = resource.getrlimit(resource.RLIMIT_NPROC)[1]
SYSTEM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
HOW_TO_ENABLE = (
    "Install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`, Fedora: `dnf install "
    "bubblewrap`) and make sure it may create namespaces (in Docker: run the hub as in "
    "docker/compose.yaml, with `security_opt: [seccomp=unconfined, apparmor=unconfined]`); "
    "or, at your own risk, set ATRIUM_SANDBOX=off to run commands unconfined."
)
_FIXED_ENV = {
    "HOME": "/tmp/home", "TMPDIR": "/tmp", "USER": "agent", "LOGNAME": "agent", "SHELL": "/bin/bash",
    "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0",
    "PYTHONUNBUFFERED": "1",  # output reaches the log (and the model) as it happens
    # The worktree belongs to the sandbox user and the room's git data to the hub: git
    # must not refuse either as "dubious ownership".
    "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*",
}
SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


class SandboxUnavailable(RuntimeError):
    """Commands are refused: no sandbox can be made here; the message says how to fix it."""


@dataclass(frozen=True, slots=True)
class Limits:
    cpu_seconds: int = 3600
    memory_bytes: int = 8 << 30  # address space; JIT runtimes reserve far more than they use
    processes: int = 1024  # counted per user: all sandboxes of the machine when the hub is root
    file_bytes: int = 1 << 30  # no file the command writes grows past this
    open_files: int = 4096
    worktree_bytes: int = 4 << 30  # disk the session's files may take: a command past it is stopped
    output_bytes: int = 32 << 20  # of a command's output, what is kept (the rest is read and dropped)


@dataclass(frozen=True, slots=True)
class RoomLimits:
    """What all commands of one room share at a time (its control group): so one room
    cannot take the processes, memory or CPU the other rooms need."""

    processes: int = 512
    memory_bytes: int = 4 << 30
    cpus: float = 1.0


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """How this hub confines commands (built from settings by the caller)."""

    enabled: bool = True  # False only by the operator's explicit opt-out
    bwrap: str = "bwrap"
    uid: int = SANDBOX_UID  # who commands run as on the machine when the hub is root
    gid: int = SANDBOX_UID
    limits: Limits = field(default_factory=Limits)
    read_only: tuple[str, ...] = ()  # trees shown read-only besides the system's
    hidden: tuple[str, ...] = ()  # never shown, even inside a read-only tree
    path: tuple[str, ...] = ()  # put first on PATH (the interpreter's bin)
    passed_env: tuple[tuple[str, str], ...] = ()  # allowlisted variables with their values
    room_limits: RoomLimits = field(default_factory=RoomLimits)
    cgroup_root: str = "/sys/fs/cgroup"

    @property
    def drops_user(self) -> bool:
        """Whether the sandbox user differs from the hub's on this machine (the hub is root)."""
        return self.enabled and os.geteuid() == 0


@dataclass(frozen=True, slots=True)
class Place:
    """Where one session's commands run."""

    worktree: Path
    tmp: Path  # the session's private /tmp
    git_dir: Path | None = None  # the room repository's .git, shown read-only
    network: bool = False
    group: str = ""  # the room's control group ("room-<id>-…"); "" runs the command in none
    uid: int | None = None  # the room's own user on the machine when the hub is root; None: the policy's

    def user(self, policy: SandboxPolicy) -> tuple[int, int]:
        """Who the command runs as on the machine (uid, gid) when the hub is root."""
        return (self.uid, self.uid) if self.uid is not None else (policy.uid, policy.gid)

    @property
    def identity(self) -> Path:
        """Where the sandbox's /etc/passwd and /etc/group are made (beside its /tmp)."""
        return self.tmp.with_name("identity")


@dataclass(frozen=True, slots=True)
class Confined:
    argv: list[str]
    env: dict[str, str]
    cwd: str
    seccomp: bytes = b""  # the program bubblewrap loads (agents.tools.seccomp), if confined


@contextlib.contextmanager
def launched(confined: Confined) -> Iterator[tuple[list[str], tuple[int, ...]]]:
    """``confined``'s command line with its seccomp program on a descriptor of this
    process, and the descriptors to pass to the child that runs it."""
    if not confined.seccomp:
        yield confined.argv, ()
        return
    fd = program_descriptor(confined.seccomp)
    try:
        yield [str(fd) if arg == SECCOMP_FD else arg for arg in confined.argv], (fd,)
    finally:
        os.close(fd)


def interpreter_policy(**overrides) -> SandboxPolicy:
    """A policy that shows the running interpreter (and its packages) read-only and puts
    its ``bin`` first on PATH, so ``python`` and the test runner the hub ships exist."""
    bin_dir = Path(sys.executable).parent
    trees = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix),
             os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}
    for name in ("python", "python3", Path(sys.executable).name):
        trees.update(_link_folders(bin_dir / name))
    overrides.setdefault("read_only", tuple(sorted(trees)))
    overrides.setdefault("path", (str(bin_dir),))
    return SandboxPolicy(**overrides)


def _link_folders(path: Path, *, hops: int = 40) -> set[str]:
    """The folders every link on the way from ``path`` to its file lives in: a venv's
    ``python`` may point through another link (a CI shim under /tmp, say) that the
    sandbox must show too, or ``python`` would be a dangling link inside it."""
    folders: set[str] = set()
    current = str(path)
    for _ in range(hops):
        if not os.path.islink(current):
            break
        target = os.path.join(os.path.dirname(current), os.readlink(current))
        folders.add(os.path.realpath(os.path.dirname(target)))
        current = os.path.normpath(target)
    return folders


def environment(policy: SandboxPolicy, place: Place) -> dict[str, str]:
    """The whole environment of a command: fixed values, PATH, and the allowlisted
    variables the operator passes through. Nothing else of the hub's."""
    env = {"LANG": "C.UTF-8", **dict(policy.passed_env)}
    env.update(_FIXED_ENV)
    env["PATH"] = os.pathsep.join(dict.fromkeys([*policy.path, *SYSTEM_PATH]))
    if not policy.enabled:
        env.update(HOME=str(place.tmp / "home"), TMPDIR=str(place.tmp))
    return env


def confine(policy: SandboxPolicy, place: Place, command: str, *, shell: str = "/bin/bash") -> Confined:
    """The command line and environment that run ``command`` confined in ``place``.

    Raises SandboxUnavailable when no sandbox can be made (and the operator did not opt
    out); call `prepare` first, once per command.
    """
    env = environment(policy, place)
    if not policy.enabled:
        return Confined([shell, "-c", command], env, str(place.worktree))
    problem = availability(policy)
    if problem:
        raise SandboxUnavailable(f"Commands cannot run: no sandbox is available on this machine "
                                 f"({problem}). {HOW_TO_ENABLE}")
    argv = _bwrap_argv(policy, place, [shell, "-c", command])
    spec = _confiner_spec(policy, place)
    if spec:
        argv = [sys.executable, "-I", "-S", str(CONFINER), json.dumps(spec), *argv]
    return Confined(argv, env, str(place.worktree), seccomp=seccomp.program())


def _confiner_spec(policy: SandboxPolicy, place: Place) -> dict:
    """What `_confiner` sets up around bubblewrap: {} when nothing is needed."""
    spec: dict = {}
    if place.network:
        slirp = shutil.which("slirp4netns", path=os.pathsep.join(SYSTEM_PATH))
        if slirp is None:
            raise SandboxUnavailable("This room lets commands use the network, and a networked sandbox needs "
                                     "slirp4netns (Debian/Ubuntu: `apt-get install slirp4netns`), which is "
                                     "not installed; turn the network off for the room or install it.")
        spec.update(network=True, slirp4netns=slirp, nsenter=_tool("nsenter"), ip=_tool("ip"),
                    root=os.geteuid() == 0)
    if grouped(policy, place):
        limits = policy.room_limits
        spec["cgroup"] = {"root": policy.cgroup_root, "group": place.group, "name": f"cmd-{uuid.uuid4().hex[:12]}",
                          "processes": limits.processes, "memory_bytes": limits.memory_bytes,
                          "cpu_quota_us": max(1000, int(limits.cpus * 100_000))}
    return spec


def grouped(policy: SandboxPolicy, place: Place) -> bool:
    """Whether the command runs in its room's control group."""
    return bool(place.group) and policy.enabled and cgroups_usable(policy.cgroup_root)


@lru_cache(maxsize=4)
def cgroups_usable(root: str) -> bool:
    """Whether this process may make its rooms' control groups: root, with the
    controllers mounted; or, on cgroup v1, a hub of its own user whose operator gave it
    the ``atrium`` folder under its own group in each controller (docs/operations.md)."""
    if os.path.exists(os.path.join(root, "cgroup.controllers")):
        # v2: only root, where the root already delegates the three controllers (a
        # populated group, as a container's root often is, cannot start delegating them;
        # an ordinary user may not move a process across the tree).
        try:
            delegated = set(Path(root, "cgroup.subtree_control").read_text().split())
        except OSError:
            return False
        return os.geteuid() == 0 and {"pids", "memory", "cpu"} <= delegated and os.access(root, os.W_OK)
    if os.geteuid() == 0:
        return all(os.access(os.path.join(root, controller), os.W_OK) for controller in ("pids", "memory", "cpu"))
    return all(os.access(os.path.dirname(room_group(root, controller, "-")), os.W_OK | os.X_OK)
               for controller in ("pids", "memory", "cpu"))


def _bwrap_argv(policy: SandboxPolicy, place: Place, command: list[str]) -> list[str]:
    argv = [policy.bwrap, "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid",
            "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox", "--seccomp", SECCOMP_FD]
    # Always a network namespace of its own: with the network on, `_confiner` gives it
    # a user-mode NAT that cannot reach the machine's loopback or private ranges.
    argv.append("--unshare-net")
    if not policy.drops_user:
        # Not root: a user namespace of our own, mapped to the hub's (unprivileged) user.
        argv += ["--unshare-user", "--disable-userns", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    mounts = Mounts()
    for tree in SYSTEM_TREES:
        mounts.system(tree)
    # The private /tmp first: what is shown below it (a toolchain, the worktree) goes on top.
    mounts.args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm", "--bind", str(place.tmp), "/tmp",
                    "--dir", "/var", "--symlink", "../tmp", "/var/tmp"]
    mounts.made.update({"/proc", "/dev", "/tmp", "/var"})
    mounts.writable_roots += ["/tmp", "/var/tmp"]  # /var/tmp is /tmp in there
    for tree in policy.read_only:
        mounts.read_only(tree)
    for path in policy.hidden:
        mounts.hide(path)
    if policy.drops_user:
        # The room's user has a name, as programs that look it up (git, ssh, whoami) expect.
        mounts.args += ["--ro-bind", str(place.identity / "passwd"), "/etc/passwd",
                        "--ro-bind", str(place.identity / "group"), "/etc/group"]
    if place.git_dir is not None:
        mounts.bind(str(place.git_dir), writable=False)
    mounts.bind(str(place.worktree), writable=True)
    dot_git = place.worktree / ".git"
    if dot_git.exists() or dot_git.is_symlink():
        # Where git finds the repository: the agent must not point it elsewhere.
        mounts.args += ["--ro-bind", str(dot_git), str(dot_git)]
    if mounts.in_tmp:  # a data folder or a toolchain under /tmp (a test run's, say)
        mount_points_in_tmp(place.tmp, [p.removeprefix("/var") for p in mounts.in_tmp])
    argv += mounts.args + ["--chdir", str(place.worktree), "--"]
    if policy.drops_user:
        uid, gid = place.user(policy)
        argv += [_tool("setpriv"), f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                 "--inh-caps=-all", "--bounding-set=-all", "--"]
    limits = policy.limits
    argv += [_tool("prlimit"), f"--cpu={limits.cpu_seconds}", f"--as={limits.memory_bytes}",
             f"--nproc={'unlimited' if ROOM_BOUND_NPROC == resource.RLIM_INFINITY else ROOM_BOUND_NPROC}"
             if grouped(policy, place) else f"--nproc={limits.processes}",
             f"--fsize={limits.file_bytes}",
             f"--nofile={limits.open_files}", "--core=0", "--"]
    return argv + command


def _tool(name: str) -> str:
    return shutil.which(name, path=os.pathsep.join(SYSTEM_PATH)) or f"/usr/bin/{name}"


_probed: dict[SandboxPolicy, tuple[str, float]] = {}
_probe_lock = threading.Lock()
RETRY_FAILED_PROBE_SECONDS = 30.0


def availability(policy: SandboxPolicy) -> str:
    """"" when a sandbox can be made with this policy, else why not. A success is
    remembered for the process's life, a failure for half a minute."""
    with _probe_lock:
        known = _probed.get(policy)
        if known is not None and (not known[0] or time.monotonic() - known[1] < RETRY_FAILED_PROBE_SECONDS):
            return known[0]
        problem = _probe(policy)
        _probed[policy] = (problem, time.monotonic())
        return problem


def _probe(policy: SandboxPolicy) -> str:
    if shutil.which(policy.bwrap) is None:
        return f"`{policy.bwrap}` (bubblewrap) is not installed"
    with tempfile.TemporaryDirectory(prefix="atrium-sandbox-probe-") as scratch:
        place = Place(worktree=Path(scratch) / "work", tmp=Path(scratch) / "tmp")
        place.worktree.mkdir()
        prepare(policy, place)
        try:
            program = seccomp.program()
        except seccomp.SeccompUnavailable as exc:
            return str(exc)
        probe = Confined(_bwrap_argv(policy, place, ["/bin/sh", "-c", "test -w . && test \"$(id -u)\" != 0"]),
                         environment(policy, place), scratch, seccomp=program)
        try:
            with launched(probe) as (argv, pass_fds):
                done = subprocess.run(argv, env=probe.env, cwd=scratch, capture_output=True, timeout=30,
                                      stdin=subprocess.DEVNULL, pass_fds=pass_fds)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap could not be started: {exc}"
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip().splitlines()
        return f"bubblewrap failed: {detail[-1] if detail else f'exit {done.returncode}'}"
    return ""
