"""Jobs are part of a session's work, through real workers, beat and job processes:
a job killed under an `await` wakes its parked session within beat's check interval,
and a session that answers "done" while its job runs is held until the job's outcome
is read. Default settings except a short shell yield (so the commands become jobs)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from django.conf import settings

from sessions.models import ApprovalRule, Session, SessionEvent
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from tests.sessions.runtime.test_workers import agent_in, ended, state_of, wait_for

YIELD = {"ATRIUM_SHELL_YIELD_SECONDS": "2"}


def start(demo_room, person, replay: str) -> Session:
    ApprovalRule.objects.create(room=demo_room, tool="shell", decision="allow")
    demo_room.check_command = ""
    demo_room.save()
    agent = agent_in(demo_room, "jobber", replay)
    task = task_create(room=demo_room, actor=person, title="Jobs", objective="Run a job")
    return session_start(task=task, agent=agent, actor=person)


def kinds(session: Session) -> list[str]:
    return list(SessionEvent.objects.filter(session=session).order_by("seq").values_list("kind", flat=True))


def test_a_job_killed_under_an_await_wakes_its_session_within_the_check_interval(hub_workers, person, demo_room):
    worker, beat = hub_workers(fast=False, **YIELD), hub_workers.beat(fast=False)
    session = start(demo_room, person, "await-dies.json")
    wait_for(lambda: state_of(session) == "waiting", 60, "the await to park the session", [worker, beat])
    (job_dir,) = (Path(settings.JOBS_DIR) / str(session.pk) / "jobs").iterdir()
    wrapper = json.loads((job_dir / "proc.json").read_text())["pid"]
    os.killpg(wrapper, signal.SIGKILL)  # the job and its wrapper die; no result file is written
    killed = time.monotonic()
    wait_for(lambda: state_of(session) != "waiting", 60, "the session to wake", [worker, beat])
    woke = time.monotonic() - killed
    interval = settings.ATRIUM_SWEEP_SECONDS
    print(f"\njob killed under await → session woken in {woke:.1f} s (check interval {interval:g} s)")
    # Within one sweep interval of the kill, plus the sweep's own dispatch and run, which on a
    # loaded 2-core machine took up to another interval.
    assert woke <= 2 * interval + 2
    wait_for(lambda: ended(session), 60, "the session to end", [worker, beat])
    assert session.state == "succeeded", session.reason
    awaited = SessionEvent.objects.filter(session=session, kind="tool.result", payload__tool="await").get()
    assert "dead" in awaited.payload["preview"] and "gone without an exit code" in awaited.payload["preview"]


def test_a_session_that_answers_done_with_a_running_job_is_held_until_its_outcome_is_read(
    hub_workers, person, demo_room
):
    worker, beat = hub_workers(fast=False, **YIELD), hub_workers.beat(fast=False)
    session = start(demo_room, person, "done-too-early.json")
    wait_for(lambda: ended(session), 120, "the session to end", [worker, beat])
    assert session.state == "succeeded", session.reason
    log = kinds(session)
    opened = [e.payload["action"] for e in SessionEvent.objects.filter(session=session, kind="jobs.open")]
    assert opened == ["remind", "hold"]
    # Held (parked) after the second "done", woken when the job ended, its outcome read
    # exactly once at the next boundary, then the last answer, and only then the merge.
    held = log.index("jobs.open", log.index("jobs.open") + 1)
    assert log.index("job.finished") > held and log.count("job.finished") == 1
    assert log.index("merge") > log.index("job.finished")
    states = [e.payload["state"] for e in SessionEvent.objects.filter(session=session, kind="session.state_changed")]
    assert "waiting" in states
    (job_dir,) = (Path(settings.JOBS_DIR) / str(session.pk) / "jobs").iterdir()
    ended_at = json.loads((job_dir / "result.json").read_text())["ended_at"]
    merge = SessionEvent.objects.get(session=session, kind="merge")
    assert merge.created_at.timestamp() >= ended_at
    finished = SessionEvent.objects.get(session=session, kind="job.finished")
    assert finished.payload["exit_code"] == 0
    last_reply = SessionEvent.objects.filter(session=session, kind="model.reply").order_by("-seq").first()
    assert "job-output-42" in last_reply.payload["text"]
