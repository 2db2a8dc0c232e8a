"""A full disk under the session's own files (issue 28, point 2): a call the disk stopped
before it changed anything is not settled as failed but handed up, its start marker taken
back, so it runs afresh once there is space; one that had run is never run again. The
session's folder on a small tmpfs of its own, filled to a page at a time."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from agents.tools.jobs import JobRegistry
from agents.tools.shell import job_handle

from .conftest import call

PAGE = 4096

MOUNTS = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="mounts a tmpfs")


@contextlib.contextmanager
def tmpfs(folder: Path, size: str):
    """``folder`` on a tmpfs of ``size`` (e.g. "4m") of its own while the block runs."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path, *, pages_left: int = 0) -> Path:
    """``folder``'s disk full but for ``pages_left`` pages (one small file each); unlink
    the file returned to free it."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as out:  # unbuffered: closing it has nothing left to write
        try:
            while out.write(b"\0" * PAGE):
                pass
        except OSError:
            pass
    os.truncate(filler, max(0, filler.stat().st_size - pages_left * PAGE))
    return filler


@pytest.fixture
def small_disk(tmp_path: Path):
    with tmpfs(tmp_path / "small", "1m") as folder:
        yield folder


@MOUNTS
@pytest.mark.parametrize("pages_left", range(12))
def test_a_shell_call_the_disk_stopped_runs_once_when_there_is_space(make_box, worktree, small_disk, pages_left):
    box = make_box(state_dir=small_disk / "session", yield_seconds=10)
    shell = call("shell", command="echo ran >> count.txt")
    filler = fill(small_disk, pages_left=pages_left)
    try:
        first = box.execute(shell)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
        first = None
    ran_before_space = (worktree / "count.txt").exists()
    filler.unlink()

    again = box.execute(shell)  # the worker's next try, with the same call id
    assert (worktree / "count.txt").read_text() == "ran\n"  # never twice, never lost
    if first is None and not ran_before_space:
        assert not again.outcome_unknown and again.text.startswith("exit 0"), again.text
    if first is not None:
        assert again.text == first.text  # settled: served as recorded


@MOUNTS
def test_a_write_the_disk_refused_is_not_settled_and_goes_through_later(make_box, small_disk):
    """The worktree's own disk full: the file stays as it was and the call runs afresh."""
    (small_disk / "worktree").mkdir()
    box = make_box(worktree=small_disk / "worktree", state_dir=small_disk / "session")
    (small_disk / "worktree" / "notes.txt").write_text("before\n")
    write = call("write_file", path="notes.txt", content="after\n")
    box.execute(call("read_file", path="notes.txt"))  # the call records' folder exists
    filler = fill(small_disk, pages_left=1)  # the start marker fits, the new content does not
    with pytest.raises(OSError) as refused:
        box.execute(write)
    assert refused.value.errno == errno.ENOSPC
    assert (small_disk / "worktree" / "notes.txt").read_text() == "before\n"
    filler.unlink()
    done = box.execute(write)
    assert not done.is_error and not done.outcome_unknown, done.text
    assert (small_disk / "worktree" / "notes.txt").read_text() == "after\n"


@MOUNTS
def test_a_wrapper_that_finds_the_disk_full_never_starts_the_command(small_disk, tmp_path):
    """Its spec fits, the record of its process does not: it exits at once, the job is
    known never to have run (no 30 s wait for a start), and it can be taken back."""
    registry = JobRegistry(small_disk / "jobs")
    (small_disk / "jobs").mkdir()
    marker = tmp_path / "ran"
    handle = job_handle("call-wrapper")
    filler = fill(small_disk, pages_left=1)
    registry.spawn(handle=handle, call_id="call-wrapper", command="touch ran", argv=["touch", str(marker)],
                   cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    deadline = time.monotonic() + 20
    while not registry.wrapper_ran_out_of_space(handle):
        assert time.monotonic() < deadline, "the wrapper did not stop for the full disk"
        time.sleep(0.05)
    assert not marker.exists()
    assert registry.retract_unstarted(handle)
    assert not registry.exists(handle)
    filler.unlink()
    registry.spawn(handle=handle, call_id="call-wrapper", command="touch ran", argv=["touch", str(marker)],
                   cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})  # the handle is free again
    (status,), _ = registry.wait([handle], seconds=20)
    assert status.state == "finished" and status.exit_code == 0 and marker.exists()


@MOUNTS
def test_a_job_whose_command_may_have_run_is_never_taken_back(small_disk, tmp_path):
    registry = JobRegistry(small_disk / "jobs")
    handle = job_handle("call-ran")
    registry.spawn(handle=handle, call_id="call-ran", command="true", argv=["true"], cwd=tmp_path,
                   env={"PATH": "/usr/bin:/bin"})
    (status,), _ = registry.wait([handle], seconds=20)
    assert status.state == "finished"
    assert not registry.retract_unstarted(handle)
    assert registry.exists(handle)



def test_a_shell_call_marked_started_but_never_spawned_runs_after_a_crash(make_box, worktree):
    """The worker died between the start marker and the job (a job is made before its
    command can start): no job, so the command never ran, and the next try runs it."""
    box = make_box()
    shell = call("shell", command="echo ran >> count.txt")
    box.records.begin(shell.id, "shell")
    outcome = box.execute(shell)
    assert not outcome.outcome_unknown and outcome.exit_code == 0, outcome.text
    assert (worktree / "count.txt").read_text() == "ran\n"
