"""The supervisor with throwaway children: restarts with backoff, reports, stops."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from hub.leftovers import EarlierRun, claim_data_folder, earlier_run, stop_left
from hub.supervision import Child, Supervisor, process_start, read_report


def sleeper() -> subprocess.Popen:
    return subprocess.Popen(["sleep", "600"], start_new_session=True)


def test_a_child_that_exits_is_restarted_after_a_backoff_that_grows(tmp_path, caplog):
    child = Child("napper", sleeper)
    supervisor = Supervisor([child], report_path=tmp_path / "supervisor.json", min_backoff=0.2, max_backoff=0.4)
    supervisor.start_all()
    try:
        first = child.process.pid
        report = read_report(tmp_path)
        assert report.ok and f"napper up (pid {first})" in report.detail
        delays = []
        for _ in range(3):
            killed_pid = child.process.pid
            os.kill(killed_pid, signal.SIGKILL)
            child.process.wait()
            killed = time.monotonic()
            supervisor.tick()  # notices the exit, schedules the restart
            assert not read_report(tmp_path).ok and "napper down, restarting in" in read_report(tmp_path).detail
            while child.process.pid == killed_pid:
                time.sleep(0.02)
                supervisor.tick()
            delays.append(time.monotonic() - killed)
        assert child.running and child.restarts == 3
        # 0.2, 0.4, capped at 0.4, and none sooner than scheduled (how much later is the machine's load).
        scheduled = [r.getMessage().rsplit("restarting in ", 1)[1] for r in caplog.records
                     if "restarting in" in r.getMessage()]
        assert scheduled == ["0.2 s", "0.4 s", "0.4 s"]
        assert delays[0] >= 0.18 and delays[1] >= 0.38 and delays[2] >= 0.38
        detail = read_report(tmp_path).detail
        assert "restarted 3×, last exited with signal SIGKILL, back after" in detail
    finally:
        supervisor.stop_all()
    assert not child.running
    assert read_report(tmp_path) is None  # a stopped supervisor leaves no report behind


def test_a_child_that_cannot_start_is_tried_again_and_the_rest_run(tmp_path):
    attempts = []

    def flaky() -> subprocess.Popen:
        attempts.append(time.monotonic())
        if len(attempts) < 2:
            raise OSError("address already in use")
        return sleeper()

    good, bad = Child("good", sleeper), Child("flaky", flaky)
    supervisor = Supervisor([good, bad], report_path=tmp_path / "supervisor.json", min_backoff=0.1)
    supervisor.start_all()
    try:
        assert good.running and not bad.running and "could not start" in bad.last_exit
        deadline = time.monotonic() + 5
        while not bad.running and time.monotonic() < deadline:
            time.sleep(0.02)
            supervisor.tick()
        assert bad.running and len(attempts) == 2
    finally:
        supervisor.stop_all()


def test_stop_all_ends_children_that_ignore_sigterm_and_the_last_one_last(tmp_path):
    stubborn = Child("stubborn", lambda: subprocess.Popen(
        ["bash", "-c", "trap '' TERM; sleep 600 & wait"], start_new_session=True))
    last = Child("redis", sleeper)
    supervisor = Supervisor([last, stubborn], report_path=tmp_path / "supervisor.json")
    supervisor.start_all()
    import hub.supervision as supervision

    original = supervision.STOP_GRACE_SECONDS
    supervision.STOP_GRACE_SECONDS = 0.5
    try:
        started = time.monotonic()
        supervisor.stop_all(order=["stubborn", "redis"])
        assert time.monotonic() - started < 5
    finally:
        supervision.STOP_GRACE_SECONDS = original
    assert not stubborn.running and not last.running


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="mounts a small filesystem (root)")
def test_a_full_disk_does_not_stop_the_supervisor_and_its_report_comes_back_with_space(tmp_path):
    """Issue 28: at a full disk the supervisor's own status write raised ENOSPC, left
    run(), and `start` stopped every process. Now a real full filesystem (a 64 KB tmpfs)
    under the report leaves the supervisor and its children running."""
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(small)], check=True)
    try:
        filler = small / "filler"
        with pytest.raises(OSError), filler.open("wb") as handle:
            while True:
                handle.write(b"x" * 4096)
                handle.flush()
        child = Child("napper", sleeper)
        supervisor = Supervisor([child], report_path=small / "supervisor.json")
        supervisor.start_all()
        try:
            for _ in range(3):
                supervisor.tick()  # ENOSPC inside: it goes on
            assert child.running and not (small / "supervisor.json").exists()
            filler.unlink()  # space again
            supervisor.tick()
            assert read_report(small).ok
        finally:
            supervisor.stop_all()
        assert not child.running
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)


def test_the_next_start_tells_a_running_supervisor_from_what_a_dead_one_left_by_pid_and_start_time(tmp_path):
    left, stranger = sleeper(), sleeper()
    try:
        report = {"pid": os.getpid(), "start": process_start(os.getpid()), "updated_at": time.time(), "children": [
            {"name": "worker", "pid": left.pid, "start": process_start(left.pid)},
            # A pid given to another process since: same number, another start time.
            {"name": "beat", "pid": stranger.pid, "start": process_start(stranger.pid) - 1},
            {"name": "daphne", "pid": None, "start": None},
        ]}
        (tmp_path / "supervisor.json").write_text(json.dumps(report))
        assert earlier_run(tmp_path) == EarlierRun(supervisor=os.getpid())  # it runs: nothing is left

        report["start"] -= 1  # the supervisor's pid, now someone else's
        (tmp_path / "supervisor.json").write_text(json.dumps(report))
        earlier = earlier_run(tmp_path)
        assert earlier.supervisor is None and [(p.name, p.pid) for p in earlier.left] == [("worker", left.pid)]
        stop_left(earlier.left, grace_seconds=5)
        assert left.wait(timeout=5) == -signal.SIGTERM
        assert stranger.poll() is None  # never signalled
    finally:
        for process in (left, stranger):
            process.kill()
            process.wait()
    assert earlier_run(tmp_path / "nowhere") == EarlierRun()
    for broken in ("null", "[1, 2]", '{"pid": "x", "children": {"a": 1}}', '{"children": [null, {"pid": 1}]}'):
        (tmp_path / "supervisor.json").write_text(broken)
        assert earlier_run(tmp_path) == EarlierRun()  # a report not of ours names nothing


def test_one_start_holds_the_data_folder_until_it_is_gone(tmp_path):
    first = claim_data_folder(tmp_path)
    assert first is not None
    assert claim_data_folder(tmp_path) is None  # a second start, even before any report
    first.close()  # as the kernel does when the supervisor dies, however it dies
    again = claim_data_folder(tmp_path)
    assert again is not None
    again.close()
