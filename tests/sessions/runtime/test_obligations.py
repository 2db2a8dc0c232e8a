"""A session's jobs stand between it and its end; a sleep is not a way to wait.
Plain Python: the decision (sessions/runtime/obligations.py) and the loop over a fake host."""

from __future__ import annotations

import pytest

from sessions.runtime.obligations import JobView, before_ending, refusal
from sessions.runtime.units import Outcome
from tests.sessions.runtime.test_loop import FakeHost, run, turn

RUNNING = JobView("job-1", "make test", running=True, unread=False, describe="still running after 2 min 0 s")
ENDED_UNREAD = JobView("job-2", "make lint", running=False, unread=True, describe="finished: exit 0 after 3.0 s")
ENDED_READ = JobView("job-3", "make docs", running=False, unread=False, describe="finished: exit 0 after 1.0 s")


def test_nothing_open_lets_the_session_end():
    assert before_ending([ENDED_READ], reminded=[]).action == "end"
    assert before_ending([], reminded=[]).action == "end"


def test_an_unread_outcome_is_delivered_before_the_end():
    verdict = before_ending([ENDED_UNREAD, ENDED_READ], reminded=[])
    assert (verdict.action, verdict.handles) == ("settle", ("job-2",))


def test_a_running_job_is_named_to_the_model_once_then_the_session_is_held():
    first = before_ending([RUNNING, ENDED_UNREAD], reminded=[])
    assert first.action == "remind" and first.handles == ("job-1",)
    assert "job job-1 `make test`: still running after 2 min 0 s" in first.text
    assert 'await(handles=["job-1"])' in first.text and "stop=true" in first.text
    assert "job job-2 `make lint` ended" in first.text
    again = before_ending([RUNNING], reminded=["job-1"])
    assert (again.action, again.handles) == ("hold", ("job-1",))
    # A job started since the reminder earns a reminder of its own.
    other = JobView("job-4", "sleep-free work", running=True, unread=False, describe="running")
    assert before_ending([RUNNING, other], reminded=["job-1"]).action == "remind"


@pytest.mark.parametrize("line", ["sleep 30", "sleep 5 && sleep 5", "sleep 10; echo done", "true && sleep 1",
                                  "  sleep   120  ", "sleep 2\nsleep 3", "env sleep 3"])
def test_a_command_that_only_sleeps_is_refused_with_what_to_do_instead(line):
    reason = refusal("shell", {"command": line})
    if line.startswith("env"):
        assert reason is None  # `env` is a program that runs another one: not caught, not harmful
        return
    assert reason and "await(seconds=N)" in reason and "await(handles=[...])" in reason


@pytest.mark.parametrize("line", ["sleep 5 && cat out.log", "sleep 2 && echo hi > f", "pytest -q", "echo hi",
                                  "sleep $(cat n)", "python -c 'import time; time.sleep(9)'", "sleep 60 | tee x"])
def test_a_command_that_does_work_besides_sleeping_runs(line):
    assert refusal("shell", {"command": line}) is None
    assert refusal("read_file", {"path": "sleep"}) is None


def test_the_loop_skips_a_sleep_with_the_explanation():
    host = FakeHost(turns=[turn("wait", ("s", "shell", {"command": "sleep 300"})), turn("done")])
    run(host)
    assert host.executed == []
    assert host.skipped[0][0] == "s" and "only sleeps" in host.skipped[0][1]


def test_done_with_a_running_job_reminds_then_holds_and_never_checks_or_merges():
    host = FakeHost(turns=[turn("done"), turn("done, really")], check_command="pytest -q", checks=[0],
                    jobs=[RUNNING])
    loop, result = run(host, clock=lambda: 1_000.0)
    assert result.outcome is Outcome.WAIT and result.wake_at == 1_000.0 + 3600
    assert loop.state.held_jobs == ["job-1"] and loop.state.jobs_reminded == ["job-1"]
    assert "You answered as if you were done" in host.requests[1].messages[-1].text
    assert [p["action"] for k, p in host.events if k == "jobs.open"] == ["remind", "hold"]
    assert "verify" not in host.kinds() and "merge" not in host.kinds()
    # Woken once the job ended and its result was read: the hold is lifted, the session ends.
    host.jobs, host.turns = [ENDED_READ], [turn("the tests passed; done")]
    assert loop.advance().outcome is Outcome.SUCCEEDED
    assert loop.state.held_jobs == []
    assert host.kinds()[-2:] == ["verify", "merge"]


def test_done_with_an_unread_outcome_goes_back_for_it():
    host = FakeHost(turns=[turn("done"), turn("saw it; done")], jobs=[ENDED_UNREAD])

    boundaries = []

    def read_it(token):
        boundaries.append(token)
        if len(boundaries) == 2:  # the boundary after "done" delivers it
            host.jobs = [ENDED_READ]
        return ()

    host.settle_jobs = read_it
    loop, result = run(host)
    assert result.outcome is Outcome.SUCCEEDED
    assert len(host.requests) == 2  # the model answered again after the outcome
