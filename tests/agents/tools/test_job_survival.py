"""Jobs outlive the process that started them: the worker is SIGKILLed, the result is not lost."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from agents.tools import ToolBox, job_handle
from observations.gateway.messages import ToolCall

PROJECT_ROOT = Path(__file__).resolve().parents[3]

# A stand-in for a Celery worker: runs one shell call, reports, then lingers until killed.
SPAWNER = """
import json, sys, time
from pathlib import Path
from agents.tools import ToolBox
from observations.gateway.messages import ToolCall
worktree, state_dir, yield_seconds, command = sys.argv[1:5]
box = ToolBox(worktree=Path(worktree), state_dir=Path(state_dir),
              yield_seconds=float(yield_seconds))
outcome = box.execute(ToolCall("call-long", "shell", {"command": command}))
print(json.dumps(outcome.to_dict()), flush=True)
time.sleep(600)
"""

COMMAND = "echo run >> runs.txt; echo before; sleep 1.5; echo after-the-kill"


def _spawn(worktree: Path, state_dir: Path, yield_seconds: float) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", SPAWNER, str(worktree), str(state_dir), str(yield_seconds),
         COMMAND],
        cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True,
    )


def _collect(box: ToolBox, handle: str) -> str:
    for _ in range(40):
        outcome = box.execute(ToolCall(f"await-{time.monotonic_ns()}", "await",
                                       {"handles": [handle]}))
        if not outcome.pending_jobs:
            return outcome.text
    raise AssertionError("the job never finished")


def _kill(process: subprocess.Popen) -> None:
    # The whole process group, as a supervisor stopping a worker does: the job survives
    # only because it runs in a session of its own.
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    assert process.returncode == -signal.SIGKILL


def test_a_job_survives_its_worker_being_killed_and_a_new_process_collects_it(worktree, state_dir):
    spawner = _spawn(worktree, state_dir, yield_seconds=0.5)
    try:
        ready, _, _ = select.select([spawner.stdout], [], [], 20)
        assert ready, "the spawner never reported"
        reported = json.loads(spawner.stdout.readline())
    finally:
        _kill(spawner)
    handle = reported["job_handle"]
    assert handle == job_handle("call-long")

    box = ToolBox(worktree=worktree, state_dir=state_dir, yield_seconds=0.5)
    assert box.jobs.status(handle).state == "running"  # it outlived its worker
    # Re-executing the recorded call serves its outcome; it does not start it again.
    replay = box.execute(ToolCall("call-long", "shell", {"command": COMMAND}))
    assert replay.replayed and replay.job_handle == handle
    result = _collect(box, handle)
    assert "finished: exit 0" in result
    assert result.endswith("before\nafter-the-kill")
    assert (worktree / "runs.txt").read_text() == "run\n"


def test_a_call_cut_off_mid_run_is_reported_honestly_and_not_run_again(worktree, state_dir):
    handle = job_handle("call-long")
    spawner = _spawn(worktree, state_dir, yield_seconds=30)
    try:
        deadline = time.monotonic() + 20
        while not (state_dir / "jobs" / handle / "proc.json").exists():
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.05)
    finally:
        _kill(spawner)  # mid-call: the outcome was never recorded

    box = ToolBox(worktree=worktree, state_dir=state_dir, yield_seconds=0.5)
    outcome = box.execute(ToolCall("call-long", "shell", {"command": COMMAND}))
    assert outcome.outcome_unknown
    assert "was not run again" in outcome.text
    assert outcome.job_handle == handle
    result = _collect(box, handle)
    assert result.endswith("before\nafter-the-kill")
    assert (worktree / "runs.txt").read_text() == "run\n"
    # The honest report is itself recorded: asking again gives the same answer.
    again = box.execute(ToolCall("call-long", "shell", {"command": COMMAND}))
    assert again.replayed and again.outcome_unknown and again.text == outcome.text
