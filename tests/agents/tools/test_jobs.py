"""The job registry's judgement of jobs it did not start, read from disk alone."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from agents.tools.jobs import JobRegistry, look_interval


def _recorded_job(directory: Path, handle: str, *, created_ago: float, proc: dict | None) -> None:
    job = directory / handle
    job.mkdir(parents=True)
    created = time.time() - created_ago
    (job / "spec.json").write_text(json.dumps({
        "handle": handle, "call_id": "c1", "command": "make test", "cwd": "/", "shell": "bash",
        "timeout": None, "created_at": created}))
    (job / "output.log").write_text("")
    os.utime(job / "output.log", (created, created))
    if proc is not None:
        (job / "proc.json").write_text(json.dumps(proc))


def test_a_job_whose_wrapper_never_started_is_dead_after_the_start_grace(tmp_path):
    registry = JobRegistry(tmp_path, start_grace_seconds=5)
    _recorded_job(tmp_path, "job-new", created_ago=1, proc=None)
    _recorded_job(tmp_path, "job-old", created_ago=60, proc=None)
    assert registry.status("job-new").state == "running"
    old = registry.status("job-old")
    assert old.state == "dead" and old.reason == "its process never started"


def test_a_job_on_another_machine_is_judged_only_by_its_silence(tmp_path):
    registry = JobRegistry(tmp_path, silence_limit_seconds=30)
    remote = {"pid": 2 ** 22 + 7, "start_ticks": 1, "host": "another-worker"}
    _recorded_job(tmp_path, "job-fresh", created_ago=5, proc=remote)
    _recorded_job(tmp_path, "job-quiet", created_ago=120, proc=remote)
    # Its pid means nothing here, so it is not declared dead for lacking a process...
    assert registry.status("job-fresh").state == "running"
    # ...but a log silent for longer than the limit is.
    quiet = registry.status("job-quiet")
    assert quiet.state == "dead" and quiet.reason.startswith("no output for 2 min")


def test_a_local_job_whose_pid_belongs_to_another_process_is_dead(tmp_path):
    registry = JobRegistry(tmp_path)
    # Our own pid, but with a start time that is not ours: the pid was reused.
    impostor = {"pid": os.getpid(), "start_ticks": 1, "host": os.uname().nodename}
    _recorded_job(tmp_path, "job-reused", created_ago=5, proc=impostor)
    status = registry.status("job-reused")
    assert status.state == "dead" and "gone without an exit code" in status.reason


def test_a_result_is_claimed_by_exactly_one_token(tmp_path):
    registry = JobRegistry(tmp_path)
    _recorded_job(tmp_path, "job-1", created_ago=1, proc=None)
    assert not registry.delivered("job-1")
    assert registry.claim("job-1", "await-call-7")
    assert registry.claim("job-1", "await-call-7")  # the same claimant, after a crash
    assert not registry.claim("job-1", "step-12")
    assert registry.delivered("job-1")


def test_a_job_on_another_machine_whose_heartbeat_stopped_is_dead(tmp_path):
    """Its output may be quiet for good reasons; a wrapper that stopped beating is gone."""
    registry = JobRegistry(tmp_path, silence_limit_seconds=900)
    remote = {"pid": 2 ** 22 + 7, "start_ticks": 1, "host": "another-worker"}
    _recorded_job(tmp_path, "job-beating", created_ago=300, proc=remote)
    _recorded_job(tmp_path, "job-stopped", created_ago=300, proc=remote)
    (tmp_path / "job-beating" / "heartbeat").touch()
    (tmp_path / "job-stopped" / "heartbeat").touch()
    stale = time.time() - 45
    os.utime(tmp_path / "job-stopped" / "heartbeat", (stale, stale))
    assert registry.status("job-beating").state == "running"
    stopped = registry.status("job-stopped")
    assert stopped.state == "dead" and "stopped reporting 45" in stopped.reason and "another-worker" in stopped.reason


def test_a_long_wait_looks_less_often_as_it_goes_on(tmp_path):
    """Sessions waiting on long jobs all day: each look reads the job's files, so the
    pauses grow to a tenth of the wait so far (a job's end is noticed at most 10% late),
    never above a second; short jobs are still looked at every 0.1 s."""
    assert [look_interval(w) for w in (0, 0.5, 1, 3, 10, 600)] == [0.1, 0.1, 0.1, 0.3, 1.0, 1.0]
    registry = JobRegistry(tmp_path, start_grace_seconds=60)
    _recorded_job(tmp_path, "job-long", created_ago=1, proc=None)  # running: its wrapper is starting
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        time.sleep(seconds)

    (status,), interrupted = registry.wait(["job-long"], seconds=4, pause=pause)
    assert status.state == "running" and not interrupted
    assert pauses[0] == 0.1 and max(pauses) > 0.3 and all(p <= 1.0 for p in pauses)
    assert len(pauses) < 30  # every 0.1 s would be 40 looks
