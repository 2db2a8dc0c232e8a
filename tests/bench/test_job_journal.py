"""Benchmark: what the jobs' journal in PostgreSQL costs, against the jobs' folders alone.

Run: .venv/bin/pytest -m bench tests/bench/test_job_journal.py -s -n0 (PostgreSQL)
Prints, each as a ratio against the file-only registry measured in the same run: a short
shell job from spawn to its delivered result; one look at a running job (what `await`
and the sweep do between waits) on its own machine and from another; and how fast the
output of a job that printed 16 MiB is shipped.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import pytest
from django.db import connection

from agents.tools.jobs import JobRegistry
from agents.tools.journaled_jobs import JournaledJobs
from sessions.models import Session, Task
from sessions.worker.job_journal import DatabaseJournal
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = [pytest.mark.bench, pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(connection.vendor != "postgresql", reason="the journal is PostgreSQL's")]

RUNS = 30
ENV = {"PATH": "/usr/bin:/bin"}


def _median(action, runs: int = RUNS) -> float:
    times = []
    for number in range(runs):
        started = time.perf_counter()
        action(number)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _registries(tmp_path: Path) -> tuple[JobRegistry, JournaledJobs, JournaledJobs]:
    task = Task.objects.create(room=make_room(make_user()), title="t", objective="o")
    session = Session.objects.create(task=task, agent=make_agent())
    journal = DatabaseJournal(session.pk)
    return (JobRegistry(tmp_path / "files"), JournaledJobs(tmp_path / "here", journal),
            JournaledJobs(tmp_path / "there", journal))


def _short_job(registry: JobRegistry, cwd: Path):
    def run(number: int) -> None:
        handle = f"job-{number}"
        registry.spawn(handle=handle, call_id=handle, command="echo hi", argv=["echo", "hi"], cwd=cwd, env=ENV)
        registry.wait([handle], seconds=10, poll_seconds=0.01)
        assert registry.claim(handle, "bench") and registry.output(handle, 100) == "hi\n"
    return run


def test_what_the_journal_costs_a_job(tmp_path):
    files, here, there = _registries(tmp_path)
    print()
    base = _median(_short_job(files, tmp_path))
    journaled = _median(_short_job(here, tmp_path))
    print(f"a short job, spawn to delivered result: files {base * 1000:.1f} ms, journaled {journaled * 1000:.1f} ms "
          f"({journaled / base:.2f}x)")

    for registry in (files, here):
        registry.spawn(handle="long", call_id="long", command="sleep 60", argv=["sleep", "60"], cwd=tmp_path, env=ENV)
    try:
        look = {name: _median(lambda _, r=registry: r.status("long"), runs=200)
                for name, registry in (("files", files), ("here", here), ("there", there))}
        print(f"one look at a running job: files {look['files'] * 1000:.2f} ms, journaled on its machine "
              f"{look['here'] * 1000:.2f} ms ({look['here'] / look['files']:.1f}x), from another machine "
              f"{look['there'] * 1000:.2f} ms ({look['there'] / look['files']:.1f}x)")
    finally:
        files.cancel("long")
        here.cancel("long")

    here.spawn(handle="loud", call_id="loud", command="print 16 MiB", argv=["head", "-c", str(16 << 20), "/dev/zero"],
               cwd=tmp_path, env=ENV)
    here.wait(["loud"], seconds=30)  # ended, and settled: everything shipped
    copy = tmp_path / "copy.log"
    started = time.perf_counter()
    copy.write_bytes((here.directory / "loud" / "output.log").read_bytes())
    copied = time.perf_counter() - started
    here.journal.forget("loud")
    (here.directory / "loud" / "settled.json").unlink()
    started = time.perf_counter()
    here._ship_output("loud")
    shipped = time.perf_counter() - started
    print(f"16 MiB of output shipped in {shipped:.2f} s ({16 / shipped:.0f} MiB/s); copied on disk in "
          f"{copied * 1000:.0f} ms ({shipped / copied:.0f}x)")
    assert there.status("loud").output_bytes == 16 << 20
