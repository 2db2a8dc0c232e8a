"""A room's commands against the hub's disk and the kernel, through the ToolBox as sessions
build it (a root hub, each room its own user). Each attack took the disk, or a namespace,
on the code before: a job's output was the hub's own file, handed to the sandbox as its
stdout, and fallocate reserved any amount of disk on it or in the worktree before any
count ran; output logs piled up past the room's limit, never counted; a command could
make a user namespace and be root in it; list_files followed links as root."""

from __future__ import annotations

import dataclasses
import os
import platform
from pathlib import Path

import pytest

from agents.tools import ToolBox, WorktreeFull
from agents.tools.sandbox import Limits, interpreter_policy
from tests.agents.tools.conftest import call

MB = 1 << 20
ROOM_UID = 1_500_000_777
LIMITS = dataclasses.replace(Limits(), file_bytes=16 * MB, worktree_bytes=48 * MB, output_bytes=4 * MB)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a root hub, as deployed")

# fallocate(2) with FALLOC_FL_KEEP_SIZE (1): blocks reserved past the end of the file, its
# size unchanged (so RLIMIT_FSIZE never applies), gigabytes in a fraction of a second.
FALLOCATE = """python3 - @TARGET@ <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
fd = 1 if sys.argv[-1] == "stdout" else os.open(sys.argv[-1], os.O_CREAT | os.O_WRONLY, 0o644)
print("fallocate", libc.fallocate(fd, 1, 0, @BYTES@), ctypes.get_errno(), file=sys.stderr)
PY"""
EOPNOTSUPP = 95


def box(tmp_path: Path, name: str, *, limits: Limits = LIMITS) -> ToolBox:
    worktree = tmp_path / name / "worktree"
    worktree.mkdir(parents=True)
    return ToolBox(worktree=worktree, state_dir=tmp_path / name / "state", yield_seconds=30,
                   sandbox=interpreter_policy(limits=limits), uid=ROOM_UID)


def fallocate(nbytes: int, target: str) -> str:
    return FALLOCATE.replace("@BYTES@", str(nbytes)).replace("@TARGET@", target)


def allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


def test_a_command_cannot_reserve_disk_through_its_output(tmp_path):
    """Its stdout is a pipe the wrapper reads, and fallocate is refused in the sandbox:
    nothing is reserved under the job's folder."""
    attacker = box(tmp_path, "attacker")
    done = attacker.execute(call("shell", command=fallocate(512 * MB, "stdout")))
    assert f"fallocate -1 {EOPNOTSUPP}" in done.text, done.text
    (log,) = (attacker.state_dir / "jobs").glob("*/output.log")
    assert allocated(log) < MB


def test_a_command_cannot_reserve_disk_in_its_worktree_before_any_count(tmp_path):
    """fallocate is refused (programs fall back to writing, which the per-file limit and
    the count see): the disk is not taken, and the session goes on."""
    attacker = box(tmp_path, "attacker")
    done = attacker.execute(call("shell", command=fallocate(512 * MB, "reserved")))
    assert f"fallocate -1 {EOPNOTSUPP}" in done.text, done.text
    assert allocated(attacker.worktree / "reserved") < MB
    attacker.check_disk()


def test_output_is_kept_up_to_its_bound_and_counted_against_the_rooms_limit(tmp_path):
    """Each command's output is kept up to its bound (the rest read and dropped, said in
    the log), and what the session's jobs kept counts against the room's disk limit."""
    attacker = box(tmp_path, "attacker")
    with pytest.raises(WorktreeFull, match="past the room's limit of 48 MB"):
        for _ in range(14):  # 16 MB of output each, 4 MB of it kept: the twelfth or so is past 48 MB
            done = attacker.execute(call("shell", command="head -c 16M /dev/zero | tr '\\0' x"))
            assert done.exit_code == 0, done.text
    logs = list((attacker.state_dir / "jobs").glob("*/output.log"))
    assert 10 <= len(logs) <= 14 and all(log.stat().st_size <= 4 * MB + 100 for log in logs)
    assert "[output past 4 MB was not kept]" in logs[0].read_text()[-100:]


def test_a_command_cannot_make_a_user_namespace(tmp_path):
    """Root inside a namespace of its own would open the kernel's larger surface
    (nf_tables, overlayfs): new namespaces are refused, whatever the call."""
    attacker = box(tmp_path, "attacker")
    done = attacker.execute(call("shell", command="unshare -Urn true; echo unshare=$?; "
                                                  "python3 -c 'import os; os.unshare(os.CLONE_NEWUSER)' 2>&1 | tail -1"))
    assert "unshare=1" in done.text and "Operation not permitted" in done.text, done.text
    if platform.machine() != "x86_64":
        return  # the raw calls below use x86_64's numbers
    # clone(2) with a namespace flag, and clone3(2), whose flags a filter cannot read.
    raw = ("import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
           "r = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0); e = ctypes.get_errno(); "
           "r3 = libc.syscall(435, 0, 0); e3 = ctypes.get_errno(); "
           "print('clone', r, os.strerror(e), 'clone3', r3, os.strerror(e3))")
    done = attacker.execute(call("shell", command=f"python3 -c \"{raw}\""))
    assert "clone -1 Operation not permitted clone3 -1 Function not implemented" in done.text, done.text


def test_list_files_tells_a_link_to_a_folder_from_any_other_link_by_nothing(tmp_path):
    """The hub lists as root: it never follows a link, not even to say whether its target
    is a folder the room may not look into."""
    attacker = box(tmp_path, "attacker")
    hidden = tmp_path / "hidden"
    (hidden / "exists").mkdir(parents=True)
    hidden.chmod(0o700)
    attacker.execute(call("shell", command=f"ln -s {hidden}/exists a; ln -s {hidden}/absent b"))
    listed = attacker.execute(call("list_files", path=".")).text
    assert "a (symlink, not followed)" in listed and "b (symlink, not followed)" in listed, listed
    assert "a/" not in listed


def test_a_link_in_the_rooms_tmp_takes_no_mount_point_out_of_it(tmp_path):
    """With the worktree under /tmp (a test run's data folder), bubblewrap made its mount
    points inside the room's /tmp itself, as root, following a link the room planted
    there out to the machine (before pivot_root, /oldroot is the machine's root). Now the
    hub makes them first, in a /tmp the room cannot move them in."""
    assert str(tmp_path).startswith("/tmp/")
    attacker = box(tmp_path, "attacker", limits=Limits())
    root_only = tmp_path / "root-only"
    root_only.mkdir(mode=0o700)
    top = str(attacker.worktree).split("/")[2]  # /tmp/<top>/...: its first folder under /tmp
    plant = attacker.execute(call("shell", command=f"mv /tmp/{top} /tmp/moved; ln -s /oldroot{root_only} /tmp/{top}; "
                                                   f"echo planted"))
    assert "planted" in plant.text and "Permission denied" in plant.text, plant.text  # the hub's folder stays
    again = attacker.execute(call("shell", command="pwd && ls /tmp"))
    assert again.exit_code == 0 and str(attacker.worktree) in again.text, again.text
    assert list(root_only.iterdir()) == []
