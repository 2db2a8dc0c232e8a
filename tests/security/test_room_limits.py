"""Issue 24, from the attacker's side: every sandbox ran as the same user with per-process
limits only, so one room holding ~1,000 processes made every other room's commands fail
to fork, and a few processes could take all the memory. Now each room's commands share
a control group of their own (pids, memory, cpu). Two rooms at once, through the
ToolBox as sessions use it: the attacker's fork bomb and memory hog stop at the
attacker's limits while the victim's commands fork and allocate as usual."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from agents.tools import ToolBox
from agents.tools._confiner import room_group
from agents.tools.sandbox import RoomLimits, cgroups_usable, interpreter_policy
from tests.agents.tools.conftest import call

pytestmark = pytest.mark.skipif(not cgroups_usable("/sys/fs/cgroup"), reason="needs control groups (root)")

CGROUPS = Path("/sys/fs/cgroup")
ROOM_GROUPS = Path(__file__).resolve().parents[2] / "deploy" / "room-groups.sh"
LIMITS = RoomLimits(processes=64, memory_bytes=256 << 20, cpus=0.5)
FORK = """python3 -c "
import os, sys, time
children = 0
try:
    for _ in range({count}):
        if os.fork() == 0:
            time.sleep({hold})
            os._exit(0)
        children += 1
except OSError as exc:
    print('fork failed:', exc)
print('forked', children, flush=True)
time.sleep({hold})
" """
ALLOCATE = "python3 -c \"x = bytearray({mb} << 20); x[::4096] = b'1' * len(x[::4096]); print('allocated', {mb})\""


@pytest.fixture
def room_box(tmp_path):
    """A room's ToolBox with its own control group, removed after the test."""
    groups = []

    def make(name: str) -> ToolBox:
        worktree, state = tmp_path / name / "worktree", tmp_path / name / "state"
        worktree.mkdir(parents=True)
        groups.append(f"room-test-{name}-{uuid.uuid4().hex[:6]}")
        return ToolBox(worktree=worktree, state_dir=state, yield_seconds=1.0,
                       sandbox=interpreter_policy(room_limits=LIMITS), group=groups[-1])

    yield make
    deadline = time.monotonic() + 10  # a stopped job's confiner removes its group as it ends
    for folder in [Path(room_group(str(CGROUPS), controller, group)) for group in groups
                   for controller in ("pids", "memory", "cpu")]:
        while folder.exists() and time.monotonic() < deadline:
            for inner in [*folder.glob("cmd-*"), folder]:
                with contextlib.suppress(OSError):
                    inner.rmdir()
            time.sleep(0.05)


def test_a_fork_bomb_in_one_room_leaves_the_other_rooms_commands_forking(room_box):
    attacker, victim = room_box("attacker"), room_box("victim")
    bomb = attacker.execute(call("shell", command=FORK.format(count=5000, hold=20)))
    assert bomb.job_handle, bomb.text  # still holding its processes, in the background
    try:
        ok = victim.execute(call("shell", command=FORK.format(count=40, hold=0) + " && echo victim-ok"))
        assert "forked 40" in ok.text and "victim-ok" in ok.text, ok.text
        report = attacker.execute(call("await", handles=[bomb.job_handle], seconds=1))
        counted = [int(line.split()[1]) for line in report.text.splitlines() if line.startswith("forked")]
        assert counted and counted[0] < LIMITS.processes, report.text  # stopped at its room's limit
    finally:
        attacker.execute(call("await", handles=[bomb.job_handle], stop=True))


def finished(box: ToolBox, outcome):
    """The command's end: a loaded machine (half a CPU for the room) may outlast the
    wait bound, and the command goes on as a job."""
    job, deadline = outcome.job_handle, time.monotonic() + 60
    while job and "still running" in outcome.text.lower() and time.monotonic() < deadline:
        outcome = box.execute(call("await", handles=[job]))
    return outcome


def test_a_memory_hog_in_one_room_is_stopped_at_its_rooms_limit_and_the_other_allocates(room_box):
    attacker, victim = room_box("attacker"), room_box("victim")
    hog = finished(attacker, attacker.execute(call("shell", command=ALLOCATE.format(mb=1024))))
    assert "allocated 1024" not in hog.text and ("exit 137" in hog.text or "Killed" in hog.text or "MemoryError" in hog.text), \
        hog.text
    fine = finished(victim, victim.execute(call("shell", command=ALLOCATE.format(mb=128))))
    assert "allocated 128" in fine.text, fine.text


@pytest.mark.skipif((CGROUPS / "cgroup.controllers").exists(), reason="reads cgroup v1's files (this machine's)")
def test_each_command_runs_in_its_rooms_group_with_the_rooms_limits(room_box):
    box = room_box("limits")
    text = box.execute(call("shell", command="cat /proc/self/cgroup")).text
    paths = {line.split(":")[1]: line.split(":")[2] for line in text.splitlines() if line.count(":") >= 2}
    group = box.shell_config.place.group
    assert paths["memory"].endswith(f"/atrium/{group}/" + paths["memory"].rsplit("/", 1)[1])
    assert f"/atrium/{group}/" in paths["pids"]
    def room(controller: str) -> Path:
        return Path(room_group(str(CGROUPS), controller, group))

    assert (room("pids") / "pids.max").read_text().strip() == "64"
    assert int((room("memory") / "memory.limit_in_bytes").read_text()) == 256 << 20
    assert (room("cpu") / "cpu.cfs_quota_us").read_text().strip() == "50000"
    # A command's own group is gone once it ended (at the latest when the room's next
    # command starts); the room's stays.
    first = paths["pids"].rsplit("/", 1)[1]
    box.execute(call("shell", command="true"))
    assert not (room("pids") / first).exists()


def test_a_confiner_killed_while_it_sets_up_the_sandbox_runs_nothing(tmp_path):
    """The sandbox's command runs only after the confiner said "go" on its gate: if the
    confiner dies first (an operator's kill, an OOM), the command never starts, without
    its room's group or network rules."""
    import json
    import signal
    import subprocess
    import sys

    from agents.tools import seccomp
    from agents.tools.handover import prepare
    from agents.tools.sandbox import CONFINER, Confined, Place, _bwrap_argv, _tool, launched

    place = Place(worktree=tmp_path / "wt", tmp=tmp_path / "tmp", network=True)
    place.worktree.mkdir()
    policy = interpreter_policy()
    prepare(policy, place)
    stuck = tmp_path / "slow-slirp"
    stuck.write_text("#!/bin/sh\nsleep 30\n")  # never says it is ready
    stuck.chmod(0o755)
    spec = {"network": True, "slirp4netns": str(stuck), "nsenter": _tool("nsenter"), "ip": _tool("ip"), "root": True}
    confined = Confined([sys.executable, "-I", "-S", str(CONFINER), json.dumps(spec),
                         *_bwrap_argv(policy, place, ["/bin/sh", "-c", "touch made"])], {}, str(place.worktree),
                        seccomp=seccomp.program())
    with launched(confined) as (argv, pass_fds):
        confiner = subprocess.Popen(argv, cwd=place.worktree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    pass_fds=pass_fds)
    time.sleep(1.5)
    confiner.send_signal(signal.SIGKILL)
    confiner.wait()
    time.sleep(1.5)
    subprocess.run(["pkill", "-f", str(stuck)], check=False)  # a real slirp4netns ends with its confiner
    assert not (place.worktree / "made").exists()


@pytest.fixture
def delegated_groups():
    """An operator's delegation to a hub of its own user, as docs/operations.md gives it:
    the hub runs in a group of its own under each v1 controller, where
    deploy/room-groups.sh (run as root in those groups) made an ``atrium`` folder the
    hub's user owns. The cgroup.procs files the hub joins."""
    if (CGROUPS / "cgroup.controllers").exists():
        pytest.skip("a hub that is not root makes its rooms' groups on cgroup v1 only")
    name = f"atrium-hub-{uuid.uuid4().hex[:8]}"
    hubs = [Path(os.path.dirname(os.path.dirname(room_group(str(CGROUPS), controller, "-")))) / name
            for controller in ("pids", "memory", "cpu")]
    for hub in hubs:
        hub.mkdir()
    join = 'for f in "$@"; do echo $$ > "$f"; done; exec "$SCRIPT" 65534'
    subprocess.run(["/bin/sh", "-c", join, "sh", *(str(hub / "cgroup.procs") for hub in hubs)], check=True,
                   env={"PATH": "/usr/bin:/bin", "SCRIPT": str(ROOM_GROUPS)})
    assert all((hub / "atrium").stat().st_uid == 65534 for hub in hubs)
    yield tuple(hub / "cgroup.procs" for hub in hubs)
    deadline = time.monotonic() + 10
    for hub in hubs:
        while hub.exists() and time.monotonic() < deadline:
            for folder in sorted((p for p in hub.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                with contextlib.suppress(OSError):
                    folder.rmdir()
            with contextlib.suppress(OSError):
                hub.rmdir()
            time.sleep(0.05)


def test_a_hub_of_its_own_user_bounds_each_room_by_the_groups_its_operator_gave_it(as_an_ordinary_user,
                                                                                     delegated_groups):
    """Not root, every room runs as the hub's one user: without control groups one room's
    fork bomb takes the user's processes from every other room. With the delegated
    ``atrium`` folders each room gets its group and limits as on a root hub."""
    run = as_an_ordinary_user
    attacker = run.place("attacker", group=f"room-1-{uuid.uuid4().hex[:10]}")
    victim = run.place("victim", group=f"room-2-{uuid.uuid4().hex[:10]}")
    answer = run([attacker, victim], [[1, FORK.format(count=40, hold=0) + " && echo victim-ok"],
                                      [1, "cat /proc/self/cgroup"]],
                 background=[[0, FORK.format(count=5000, hold=8)]], settle=3,
                 limits={"processes": LIMITS.processes, "memory_bytes": LIMITS.memory_bytes, "cpus": LIMITS.cpus},
                 procs=delegated_groups)
    assert answer["uid"] == 65534 and answer["room_groups"], answer
    ok, groups, bomb = (result["out"] for result in answer["results"])
    assert "forked 40" in ok and "victim-ok" in ok, ok
    assert f"/atrium/{victim['group']}/" in groups, groups
    counted = [int(line.split()[1]) for line in bomb.splitlines() if line.startswith("forked")]
    assert counted and counted[0] < LIMITS.processes, bomb  # stopped at its room's limit
