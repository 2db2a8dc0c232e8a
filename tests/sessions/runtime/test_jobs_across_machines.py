"""A session's jobs as workers on two machines see them, with nothing shared but
PostgreSQL: each "machine" has a jobs folder of its own. The one that runs a job ships
what it prints while it runs; the other reports it (running, its output so far, how it
ended), stops it, and, once the first one's worker is gone, reports it lost with what it
had printed, never as running."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from agents.tools import journaled_jobs
from agents.tools.journaled_jobs import BLOCK_BYTES, JournaledJobs
from sessions.models import Job, Session, Task
from sessions.worker.job_journal import DatabaseJournal, Shipper, session_jobs
from tests.conftest import hub_process_env, process_alive
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(connection.vendor != "postgresql",
                                 reason="an SQLite hub is one machine: its jobs' folders say it all")]

PROJECT_ROOT = Path(__file__).resolve().parents[3]
TICKER = "i=0; while true; do i=$((i+1)); echo line $i; sleep 0.2; done"

# A worker's process on machine A: it ships its machine's jobs (as each Celery process
# does from worker_process_init), starts one if told to, and lives until it is killed.
WORKER = """
import sys, time, django
django.setup()
from datetime import timedelta
from pathlib import Path
from sessions.worker.job_journal import SHIPPER, session_jobs
session_id, handle, command = int(sys.argv[1]), sys.argv[2], sys.argv[3]
SHIPPER.start()
if command:
    session_jobs(session_id).spawn(handle=handle, call_id="call-1", command=command, argv=["bash", "-c", command],
                                   cwd=Path.cwd(), env={"PATH": "/usr/bin:/bin"})
print("ready", flush=True)
time.sleep(600)
"""


@pytest.fixture
def session() -> Session:
    owner = make_user()
    task = Task.objects.create(room=make_room(owner), title="Fix it", objective="Fix the bug")
    return Session.objects.create(task=task, agent=make_agent())


def _machine(tmp_path: Path, name: str, session: Session, **kwargs) -> JournaledJobs:
    return JournaledJobs(tmp_path / name / "jobs" / str(session.pk) / "jobs", DatabaseJournal(session.pk), **kwargs)


def _spawn(jobs: JournaledJobs, handle: str, command: str, cwd: Path) -> None:
    cwd.mkdir(parents=True, exist_ok=True)
    jobs.spawn(handle=handle, call_id=f"call-{handle}", command=command, argv=["bash", "-c", command], cwd=cwd,
               env={"PATH": "/usr/bin:/bin"})


def _until(condition, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def _line(process: subprocess.Popen[str], seconds: float = 60.0) -> str:
    ready, _, _ = select.select([process.stdout], [], [], seconds)
    assert ready, "the worker said nothing"
    return process.stdout.readline().strip()


def _wrapper_pid(jobs: JournaledJobs, handle: str) -> int:
    proc = jobs.directory / handle / "proc.json"
    _until(proc.exists)
    return int(json.loads(proc.read_text())["pid"])


def test_another_machine_reports_a_job_and_its_whole_output(tmp_path, session, monkeypatch):
    monkeypatch.setattr(journaled_jobs, "BLOCKS_PER_SHIPMENT", 2)  # its three blocks in two statements
    here, there = _machine(tmp_path, "a", session), _machine(tmp_path, "b", session)
    # Two and a half blocks of output, and a last line after them.
    command = f"head -c {BLOCK_BYTES * 5 // 2} /dev/zero | tr '\\0' x; echo; echo the-last-line; exit 3"
    _spawn(here, "job-1", command, tmp_path / "work")
    assert there.handles() == ["job-1"]
    assert there.status("job-1").state == "running"
    _until(lambda: here.status("job-1").done)  # settled here, with the last of its output

    ended = there.status("job-1")
    assert (ended.state, ended.exit_code) == ("finished", 3)
    assert ended.output_bytes == BLOCK_BYTES * 5 // 2 + len("\nthe-last-line\n")
    text = there.output("job-1", 4_000)
    assert text == here.output("job-1", 4_000)
    assert text.startswith("xxx") and text.rstrip().endswith("the-last-line") and "elided from the middle" in text
    assert Job.objects.get(handle="job-1").blocks.count() == 3
    # Its result is handed over once, whichever machine asks.
    assert there.claim("job-1", "step-4") and not here.claim("job-1", "await-9") and here.delivered("job-1")


def test_a_job_stopped_from_another_machine_stops_where_it_runs(tmp_path, session):
    here, there = _machine(tmp_path, "a", session), _machine(tmp_path, "b", session)
    _spawn(here, "job-1", TICKER, tmp_path / "work")
    pid = _wrapper_pid(here, "job-1")
    stopped = there.cancel("job-1", "stopped by the agent")
    assert (stopped.state, stopped.reason) == ("cancelled", "stopped by the agent")
    # Its owner sees the journal's ending at its next look, and the command goes.
    assert here.status("job-1").state == "cancelled"
    _until(lambda: not process_alive(pid), 15)
    assert there.cancel_running("the session ended") == ()


def test_an_ending_declared_elsewhere_first_stands_on_both_machines(tmp_path, session):
    here, there = _machine(tmp_path, "a", session), _machine(tmp_path, "b", session, lost_after_seconds=0.0)
    _spawn(here, "job-1", "echo done", tmp_path / "work")
    _until(lambda: (here.directory / "job-1" / "result.json").exists())  # ended here, not yet settled
    # The other machine, hearing no beat, declared it lost first: that ending stands.
    _until(lambda: there.status("job-1").done)
    lost = there.status("job-1")
    assert lost.state == "dead" and lost.reason.startswith("lost:")
    assert here.status("job-1").state == "dead"
    assert there.status("job-1").state == "dead"


def test_a_job_whose_worker_died_is_lost_with_what_it_printed(tmp_path, session):
    env = hub_process_env(ATRIUM_DATA_DIR=str(tmp_path / "a"))
    worker = subprocess.Popen([sys.executable, "-c", WORKER, str(session.pk), "job-1", TICKER], env=env,
                              cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert _line(worker) == "ready"
        there = _machine(tmp_path, "b", session, lost_after_seconds=3.0)
        # Shipped while it runs: the other machine reads its output as it grows.
        _until(lambda: "line 5" in there.output("job-1", 2_000))
        assert there.status("job-1").state == "running"
        os.kill(worker.pid, signal.SIGKILL)  # the worker dies; its job runs on, unreported
        worker.wait(timeout=10)
        printed = there.output("job-1", 2_000)
        _until(lambda: there.status("job-1").done, 20)
        lost = there.status("job-1")
        assert lost.state == "dead" and "stopped reporting" in lost.reason, lost.reason
        assert there.output("job-1", 2_000).startswith(printed.rstrip("\n"))
        time.sleep(1.5)
        assert _machine(tmp_path, "c", session).status("job-1").state == "dead"  # never running again

        # A worker that starts on machine A adopts the job's folder, brings the ending
        # there, and its wrapper stops the command.
        pid = _wrapper_pid(JournaledJobs(tmp_path / "a" / "jobs" / str(session.pk) / "jobs",
                                         DatabaseJournal(session.pk)), "job-1")
        assert process_alive(pid)
        restarted = subprocess.Popen([sys.executable, "-c", WORKER, str(session.pk), "job-1", ""], env=env,
                                     cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True)
        try:
            assert _line(restarted) == "ready"
            _until(lambda: not process_alive(pid), 20)
        finally:
            restarted.kill()
            restarted.wait()
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        _kill_job(tmp_path / "a" / "jobs" / str(session.pk) / "jobs" / "job-1")


def test_a_journal_that_was_away_loses_no_job_whose_owner_beats_again(tmp_path, session):
    """A database restart leaves every beat old: the jobs whose owners ship again are
    not lost, however old their beat was when another machine first looked."""
    here, there = _machine(tmp_path, "a", session), _machine(tmp_path, "b", session, lost_after_seconds=1.0)
    _spawn(here, "job-1", TICKER, tmp_path / "work")
    try:
        Job.objects.update(beat_at=timezone.now() - timedelta(hours=1))
        assert there.status("job-1").state == "running"  # its silence seen, not yet judged
        assert here.ship("job-1")  # its owner's first pass once the database is back
        time.sleep(1.5)
        assert there.status("job-1").state == "running"
        # Once its beat stays away for the bound, seen twice, it is lost.
        _until(lambda: there.status("job-1").done, 10)
        assert there.status("job-1").reason.startswith("lost:")
    finally:
        _kill_job(here.directory / "job-1")


def test_a_call_started_on_another_machine_is_never_run_again_there(tmp_path, session):
    """A session resumed on another machine asks whether its interrupted shell call ever
    started its command: it did, on the first machine, so it is not run again."""
    here, there = _machine(tmp_path, "a", session), _machine(tmp_path, "b", session)
    _spawn(here, "job-1", "echo once", tmp_path / "work")
    assert not there.retract_unstarted("job-1")
    assert there.handles() == ["job-1"] and here.status("job-1").handle == "job-1"
    assert there.retract_unstarted("job-never-recorded")  # nothing anywhere: it never ran


def test_a_call_whose_job_never_started_runs_again_elsewhere_and_only_that_run_counts(tmp_path, session):
    here, there = _machine(tmp_path, "a", session, start_grace_seconds=0.0), _machine(tmp_path, "b", session)
    # Recorded on machine A, whose worker died before the wrapper recorded its process.
    job_dir = here.directory / "job-1"
    job_dir.mkdir(parents=True)
    spec = {"handle": "job-1", "call_id": "call-job-1", "command": "echo again", "argv": ["echo", "again"],
            "cwd": str(tmp_path), "timeout": None, "created_at": time.time() - 60}
    (job_dir / "spec.json").write_text(json.dumps(spec))
    (job_dir / "output.log").touch()
    DatabaseJournal(session.pk).open("job-1", spec, socket.gethostname())
    assert here.status("job-1").reason == "its process never started"
    # Machine B takes the call back and runs it again, under the same handle.
    assert there.retract_unstarted("job-1")
    _spawn(there, "job-1", "echo again", tmp_path / "work")
    _until(lambda: there.status("job-1").done)
    # A's folder of the run that never started is not the job any more, on A too.
    for machine in (_machine(tmp_path, "a", session), there):
        ended = machine.status("job-1")
        assert (ended.state, ended.exit_code) == ("finished", 0) and "again" in machine.output("job-1", 100)
        assert not machine.ship("job-1")


def test_a_shipper_beats_every_job_though_one_of_them_fails(tmp_path, session, settings):
    settings.JOBS_DIR = tmp_path / "jobs"
    jobs = session_jobs(session.pk)
    broken = jobs.directory / "job-0"  # sorted first, with a spec nobody can read
    broken.mkdir(parents=True)
    (broken / "spec.json").write_text("{not json")
    os.utime(broken / "spec.json", (time.time() - 120, time.time() - 120))
    _spawn(jobs, "job-1", TICKER, tmp_path / "work")
    try:
        _until(lambda: (jobs.directory / "job-1" / "output.log").stat().st_size > 0)
        Job.objects.update(beat_at=timezone.now() - timedelta(minutes=1))  # as if its shipper had died
        Shipper().ship_once()  # adopts both; the first fails
        entry = DatabaseJournal(session.pk).entry("job-1")
        assert entry.beat_age < 5 and entry.output_bytes > 0
    finally:
        _kill_job(jobs.directory / "job-1")


def test_a_job_is_stopped_where_it_runs_when_the_journal_is_away(tmp_path, session):
    here = _machine(tmp_path, "a", session)
    _spawn(here, "job-1", TICKER, tmp_path / "work")
    pid = _wrapper_pid(here, "job-1")

    class Away:
        def __getattr__(self, name):
            raise ConnectionError("the database is away")

    here.journal = Away()
    with pytest.raises(ConnectionError):
        here.cancel("job-1", "the session ended")
    _until(lambda: not process_alive(pid), 15)
    assert json.loads((here.directory / "job-1" / "result.json").read_text())["state"] == "cancelled"


def test_a_job_started_before_the_journal_is_listed_and_recorded_when_it_ends(tmp_path, session):
    here = _machine(tmp_path, "a", session)
    _spawn(here, "job-1", "echo from-before", tmp_path / "work")
    Job.objects.all().delete()  # as a job a worker started before this version had
    assert here.handles() == ["job-1"]
    _until(lambda: here.status("job-1").done)
    assert here.claim("job-1", "step-2")
    there = _machine(tmp_path, "b", session)
    assert there.status("job-1").exit_code == 0 and "from-before" in there.output("job-1", 1_000)


def _kill_job(job_dir: Path) -> None:
    """The job's wrapper and command, whatever the test left running."""
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        os.killpg(int(json.loads((job_dir / "proc.json").read_text())["pid"]), signal.SIGKILL)
