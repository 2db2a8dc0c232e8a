"""shell and await: bounded calls, jobs that run on, results delivered exactly once."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from .conftest import YIELD_SOON, call


def _pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def _running(argv: str) -> list[int]:
    """Live processes on this machine whose command line is ``argv`` (the sandbox has
    its own pid numbers, so its processes are found by what they run)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = entry.joinpath("cmdline").read_bytes().replace(b"\0", b" ").strip()
            if cmdline == argv.encode() and _pid_alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _wait_for(predicate, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def _await_until_done(box, handle: str) -> str:
    """Call await (each call bounded) until the job's result arrives; return that text."""
    for _ in range(40):
        outcome = box.execute(call("await", handles=[handle]))
        if not outcome.pending_jobs:
            return outcome.text
    raise AssertionError("the job never finished")


def test_a_quick_command_returns_exit_code_and_interleaved_output(make_box, worktree):
    box = make_box()
    shell = call("shell", command="pwd; echo err >&2; exit 3")
    outcome = box.execute(shell)
    assert not outcome.is_error and outcome.exit_code == 3
    assert box.execute(shell).exit_code == 3  # served from the record, the exit code with it
    assert outcome.job_handle is None and not outcome.yielded
    lines = outcome.text.splitlines()
    assert lines[0].startswith("exit 3 after ")
    assert lines[1:] == [str(worktree.resolve()), "err"]
    assert outcome.modified_files
    assert outcome.purpose == "shell: pwd; echo err >&2; exit 3"


def test_a_long_command_yields_within_the_bound_and_its_result_arrives_once(make_box, worktree):
    box = make_box(yield_seconds=YIELD_SOON)
    started = time.monotonic()
    shell = box.execute(call("shell", command="echo started; sleep 1.5; echo finished"))
    assert time.monotonic() - started < 1.5
    assert shell.job_handle is not None and shell.pending_jobs == (shell.job_handle,)
    assert "continues as job " + shell.job_handle in shell.text
    assert "Output so far:\nstarted" in shell.text

    result = _await_until_done(box, shell.job_handle)
    assert "finished: exit 0" in result
    assert result.endswith("started\nfinished")
    again = box.execute(call("await", handles=[shell.job_handle]))
    assert "already delivered" in again.text and "started" not in again.text
    assert box.settle_jobs("step-9") == ()


def test_an_unawaited_job_is_settled_once_at_a_step_boundary(make_box):
    box = make_box(yield_seconds=YIELD_SOON)
    shell = box.execute(call("shell", command="sleep 0.8; echo late"))
    handle = shell.job_handle
    assert handle is not None
    assert box.settle_jobs("step-1") == ()  # still running: nothing to settle
    _wait_for(lambda: box.jobs.status(handle).done)
    (report,) = box.settle_jobs("step-2")
    assert (report.handle, report.state, report.exit_code) == (handle, "finished", 0)
    assert report.text.endswith("late")
    # The same boundary re-run after a crash gets the same report; a later one gets none.
    assert box.settle_jobs("step-2") == (report,)
    assert box.settle_jobs("step-3") == ()
    assert box.execute(call("await")).text == "No unfinished jobs to wait for."


def test_a_timeout_kills_the_command_and_everything_it_started(make_box, worktree):
    box = make_box(yield_seconds=10)
    outcome = box.execute(call("shell", command="sleep 30.25 & touch started; sleep 30", timeout=0.5))
    assert outcome.text.startswith("exit 124 after ")
    assert "killed at its 0.5 s timeout" in outcome.text
    assert (worktree / "started").exists()
    _wait_for(lambda: not _running("sleep 30.25"), 3)


def test_background_processes_end_with_their_command(run, worktree):
    outcome = run("shell", command="sleep 30.5 & touch started")
    assert outcome.text.startswith("exit 0")
    assert (worktree / "started").exists()
    _wait_for(lambda: not _running("sleep 30.5"), 3)


def test_long_output_is_bounded_to_head_and_tail(run):
    outcome = run("shell", command="seq 1 200000")
    assert len(outcome.text) < 17_000
    lines = outcome.text.splitlines()
    assert lines[1:4] == ["1", "2", "3"]
    assert lines[-1] == "200000"
    assert "elided from the middle" in outcome.text


def test_a_waiting_tool_passes_its_time_in_the_given_pause_which_can_cut_it_short(make_box):
    """The worker's pause returns when the session's doorbell rings; the tool looks at
    once, so a message is seen when it arrives, not at the next 0.1 s tick."""
    rung = threading.Event()
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 3:
            rung.set()  # the bell rings during the third pause, which ends there

    box = make_box(yield_seconds=20, interrupted=rung.is_set, pause=pause)
    started = time.monotonic()
    shell = box.execute(call("shell", command="sleep 30"))
    assert "a message for you arrived" in shell.text and len(pauses) == 3
    assert all(0 < seconds <= 0.1 for seconds in pauses)
    rung.clear()
    pauses.clear()
    timer = box.execute(call("await", seconds=20))
    assert timer.text.startswith("Returned early") and len(pauses) == 3
    assert time.monotonic() - started < 3  # the pauses passed no time: no sleeping besides them
    box.cancel_jobs()


def test_commands_do_not_see_the_workers_secrets(box, monkeypatch):
    for name, value in {"OPENAI_API_KEY": "sk-secret", "DATABASE_URL": "postgres://x", "PGPASSFILE": "/x",
                        "GITHUB_PAT": "ghp_canary", "HTTPS_PROXY": "http://u:pw@proxy"}.items():
        monkeypatch.setenv(name, value)
    outcome = box.execute(call("shell", command="env"))
    assert "sk-secret" not in outcome.text and "ghp_canary" not in outcome.text and "pw@" not in outcome.text
    assert "LANG=C.UTF-8" in outcome.text and "PATH=" in outcome.text


def test_shell_and_await_return_early_when_a_message_arrives(make_box):
    arrived = threading.Event()
    box = make_box(yield_seconds=20, interrupted=arrived.is_set)
    threading.Timer(0.3, arrived.set).start()
    started = time.monotonic()
    shell = box.execute(call("shell", command="sleep 30"))
    assert time.monotonic() - started < 3
    assert "a message for you arrived" in shell.text and shell.job_handle and shell.interrupted
    waited = box.execute(call("await", handles=[shell.job_handle], seconds=20))
    assert time.monotonic() - started < 4
    assert waited.text.startswith("Returned early: a message for you arrived.") and waited.interrupted
    assert waited.pending_jobs == (shell.job_handle,)
    timer = box.execute(call("await", seconds=20))
    assert timer.text.startswith("Returned early") and timer.interrupted
    arrived.clear()
    assert not box.execute(call("shell", command="true")).interrupted
    (cancelled,) = box.cancel_jobs()
    assert cancelled.state == "cancelled"


def test_await_without_jobs_is_a_timer_bounded_by_the_yield_bound(make_box):
    box = make_box(yield_seconds=YIELD_SOON)
    started = time.monotonic()
    assert box.execute(call("await", seconds=0.2)).text == "Waited 0.2 s."
    capped = box.execute(call("await", seconds=3600))
    assert capped.text == "Waited 0.5 s (the most one call waits)."
    assert 0.65 <= time.monotonic() - started < 3


def test_await_of_an_unknown_handle_lists_the_known_ones(make_box):
    box = make_box()
    shell = box.execute(call("shell", command="true"))
    assert shell.job_handle is None
    outcome = box.execute(call("await", handles=["job-nope"]))
    assert outcome.is_error
    assert "unknown job handle(s) job-nope" in outcome.text


def test_a_silent_job_is_reported_dead_and_its_processes_are_killed(make_box, worktree):
    box = make_box(silence_limit_seconds=0.6, yield_seconds=YIELD_SOON)
    shell = box.execute(call("shell", command="sleep 30.75"))
    handle = shell.job_handle
    assert handle is not None
    _wait_for(lambda: _running("sleep 30.75"), 3)
    _wait_for(lambda: box.jobs.status(handle).done, 5)
    status = box.jobs.status(handle)
    assert status.state == "dead"
    assert "no output for" in status.reason
    _wait_for(lambda: not _running("sleep 30.75"), 3)
    result = box.execute(call("await", handles=[handle]))
    assert f"job {handle}" in result.text and "dead after" in result.text


def test_a_job_whose_process_vanished_is_reported_dead(make_box, state_dir):
    box = make_box(yield_seconds=YIELD_SOON)
    shell = box.execute(call("shell", command="sleep 30"))
    handle = shell.job_handle
    proc = json.loads((state_dir / "jobs" / handle / "proc.json").read_text())
    os.killpg(proc["pid"], signal.SIGKILL)  # wrapper and command die; no exit code written
    _wait_for(lambda: box.jobs.status(handle).done, 5)
    status = box.jobs.status(handle)
    assert status.state == "dead"
    assert "gone without an exit code" in status.reason
    # Dead is final: asking again does not change the answer.
    assert box.jobs.status(handle) == status


def test_a_finished_job_keeps_its_result_when_cancelled_late(box):
    shell = box.execute(call("shell", command="echo done"))
    assert shell.job_handle is None
    (handle,) = box.jobs.handles()
    assert box.jobs.cancel(handle).state == "finished"


@pytest.mark.parametrize("bad", [{"command": ""}, {"command": "ls", "timeout": 0}])
def test_empty_commands_and_zero_timeouts_are_refused(run, bad):
    outcome = run("shell", **bad)
    assert outcome.is_error and outcome.text.startswith("Invalid arguments: shell:")


def test_cancelling_jobs_stops_their_processes_and_records_why(make_box, worktree):
    box = make_box(yield_seconds=YIELD_SOON)
    shell = box.execute(call("shell", command="sleep 31.5"))
    _wait_for(lambda: _running("sleep 31.5"), 3)
    (cancelled,) = box.cancel_jobs("the person cancelled the session")
    assert (cancelled.handle, cancelled.state) == (shell.job_handle, "cancelled")
    assert cancelled.reason == "the person cancelled the session"
    _wait_for(lambda: not _running("sleep 31.5"), 3)
    assert box.cancel_jobs() == ()


def test_a_command_that_cannot_start_is_an_error_now_and_never_settles_later(make_box, tmp_path):
    box = make_box(worktree=tmp_path / "missing-worktree")
    outcome = box.execute(call("shell", command="true"))
    assert outcome.is_error and outcome.text.startswith("shell failed: the worktree is missing")
    assert box.job_statuses() == ()
    assert box.settle_jobs("step-1") == ()


def test_a_job_declared_ended_elsewhere_is_stopped_by_its_own_wrapper(make_box, worktree):
    """A cancel or a silence verdict may be written by another machine, which cannot
    signal the job: the wrapper sees the recorded ending at its next heartbeat."""
    box = make_box(yield_seconds=YIELD_SOON)
    shell = box.execute(call("shell", command="echo started; exec sleep 600"))
    handle = shell.job_handle
    job_dir = box.jobs.directory / handle
    (job_dir / "result.json").write_text('{"state": "cancelled", "reason": "elsewhere", "ended_at": 1}')
    proc = json.loads((job_dir / "proc.json").read_text())
    deadline = time.monotonic() + 15
    while Path(f"/proc/{proc['pid']}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not Path(f"/proc/{proc['pid']}").exists() or "Z" in Path(f"/proc/{proc['pid']}/stat").read_text().split(")")[1][:3]
    assert box.jobs.status(handle).state == "cancelled"


def test_await_with_stop_ends_the_jobs_and_hands_over_their_output_once(make_box):
    box = make_box(yield_seconds=YIELD_SOON)
    shell = box.execute(call("shell", command="echo partial-output; exec sleep 600"))
    stopped = box.execute(call("await", handles=[shell.job_handle], stop=True))
    assert "partial-output" in stopped.text and "cancelled" in stopped.text and "stopped by the agent" in stopped.text
    assert box.jobs.status(shell.job_handle).state == "cancelled"
    again = box.execute(call("await", handles=[shell.job_handle], stop=True))
    assert "already delivered" in again.text
    assert box.execute(call("await", stop=True)).text == "No unfinished jobs to stop."
