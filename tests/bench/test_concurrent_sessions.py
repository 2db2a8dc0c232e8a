"""Benchmark: many short sessions at once on a few workers (issue 15).

Run: ./.venv/bin/pytest -m bench tests/bench/test_concurrent_sessions.py -s
(with DATABASE_URL/REDIS_URL pointing at PostgreSQL and Redis, as CI runs the tests;
BENCH_SESSIONS=20,50 and BENCH_WORKERS=2 shorten it while developing).

20, 50 and 100 sessions of a three-step replay (read a file, run a command, finish) are
started at once (one commit) on 2 real Celery workers, then on 4 (one pool process
each, database connections kept as compose keeps them, beat and the sweep's worker,
default timings), each batch in a room of its own. Printed per batch: sessions per
minute, the wait for a first worker, step latency p50/p99 (the wall time between a
session's step boundaries, queue waits after a slice included), how many sessions got
stuck (not ended when the batch stopped making progress) or failed (the target: 0 of
both with 100 at once), the most database connections open at once (PostgreSQL), and
the errors the workers logged. The baselines are in the same run: per-session time
against the 20-session batch on the same workers, and 4 workers against 2. Without
DATABASE_URL it measures the embedded SQLite default (BENCH_WORKERS=1,2,4: `manage.py
start` runs one worker).
"""

from __future__ import annotations

import os
import time
from collections import Counter, defaultdict
from dataclasses import dataclass

import pytest
from django.db import connection, transaction
from django.utils import timezone

from agents.models import AgentProfile
from rooms.models import Room, RoomAgent
from rooms.repository.prepare import TemplateRepository
from rooms.services import room_create
from sessions.models import ApprovalRule, Session, SessionEvent
from sessions.runtime import states
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from tests.bench.test_responsiveness import percentile
from tests.session_fixtures import DEMO_REPO

pytestmark = pytest.mark.bench

SIZES = [int(n) for n in os.environ.get("BENCH_SESSIONS", "20,50,100").split(",")]
WORKERS = [int(n) for n in os.environ.get("BENCH_WORKERS", "2,4").split(",")]
ENDED = {states.SUCCEEDED, states.FAILED, states.CANCELLED, states.TIMED_OUT, states.NEEDS_MERGE}
STALL_SECONDS = 90  # no session ended for this long: the rest are stuck


@dataclass
class Batch:
    workers: int
    sessions: int
    seconds: float
    first_claim: list[float]
    step_latency: list[float]
    stuck: int
    failed: int
    connections: int  # the most database connections seen at once (PostgreSQL only), this process's included

    @property
    def per_minute(self) -> float:
        return self.sessions / self.seconds * 60

    @property
    def per_session(self) -> float:
        """Worker-seconds a session cost: the batch's wall time times its workers, per session."""
        return self.seconds * self.workers / self.sessions


def raised(log: str) -> list[str]:
    """The exception line ending each traceback in a log."""
    errors, lines = [], log.splitlines()
    for n, text in enumerate(lines):
        if text.startswith("Traceback"):
            end = next((t for t in lines[n + 1:] if t and not t.startswith((" ", "Traceback", "During", "The above"))),
                       "?")
            errors.append(end[:300])
    return errors


def database_connections() -> int:
    if connection.vendor != "postgresql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return cursor.fetchone()[0]


def run_batch(person, room, agent, count: int, workers: int) -> Batch:
    tasks = [task_create(room=room, actor=person, title=f"Task {n}", objective="Look around") for n in range(count)]
    began = timezone.now()
    with transaction.atomic():  # all queued at once: their turns leave on one commit
        ids = [session_start(task=task, agent=agent, actor=person).pk for task in tasks]
    last_progress, done, connections = time.monotonic(), 0, 0
    while True:
        connections = max(connections, database_connections())
        ended = Session.objects.filter(pk__in=ids, state__in=ENDED).count()
        if ended == count:
            break
        if ended > done:
            last_progress, done = time.monotonic(), ended
        elif time.monotonic() - last_progress > STALL_SECONDS:
            break
        time.sleep(0.5)
    rows = list(Session.objects.filter(pk__in=ids).values("pk", "state", "reason", "created_at", "finished_at"))
    finished = [r["finished_at"] for r in rows if r["finished_at"]]
    seconds = ((max(finished) if finished else timezone.now()) - began).total_seconds()
    events = defaultdict(list)
    for session_id, kind, created_at in SessionEvent.objects.filter(
            session_id__in=ids, kind__in=["session.claimed", "model.reply"]).order_by("session_id", "seq").values_list(
            "session_id", "kind", "created_at"):
        events[session_id].append((kind, created_at))
    created = {r["pk"]: r["created_at"] for r in rows}
    first_claim, steps = [], []
    for session_id, timeline in events.items():
        claims = [at for kind, at in timeline if kind == "session.claimed"]
        if claims:
            first_claim.append((claims[0] - created[session_id]).total_seconds())
        previous = None
        for kind, at in timeline:
            if kind == "session.claimed" and previous is None:
                previous = at
            elif kind == "model.reply" and previous is not None:
                steps.append((at - previous).total_seconds())
                previous = at
    stuck = [r for r in rows if r["state"] not in ENDED]
    failed = [r for r in rows if r["state"] in ENDED and r["state"] != states.SUCCEEDED]
    for r in (stuck + failed)[:5]:
        print(f"  session {r['pk']}: {r['state']} {r['reason'][:200]!r}")
    Session.objects.filter(pk__in=[r["pk"] for r in stuck]).update(state=states.CANCELLED, lease_owner="")
    return Batch(workers=workers, sessions=count, seconds=seconds, first_claim=first_claim or [0.0],
                 step_latency=steps or [0.0], stuck=len(stuck), failed=len(failed), connections=connections)


def line(batch: Batch, base: Batch) -> str:
    return (f"  {batch.sessions:>3} sessions: {batch.per_minute:6.1f}/min, {batch.seconds:6.1f} s; "
            f"first claim p50 {percentile(batch.first_claim, 50):5.1f} s p99 {percentile(batch.first_claim, 99):5.1f} s; "
            f"step p50 {percentile(batch.step_latency, 50):.3f} s p99 {percentile(batch.step_latency, 99):.3f} s "
            f"(n={len(batch.step_latency)}); stuck {batch.stuck}, failed {batch.failed}; "
            f"{f'database connections ≤ {batch.connections}; ' if batch.connections else ''}"
            f"per session ×{batch.per_session / base.per_session:.2f} of {base.sessions}")


def fresh_room(person, name: str) -> tuple[Room, AgentProfile]:
    """A room of its own per batch: a batch's worktrees and commits never slow the next one."""
    room = room_create(owner=person, name=name, source=TemplateRepository(DEMO_REPO), check_command="")
    ApprovalRule.objects.create(room=room, tool="shell", decision="allow")
    agent = AgentProfile.objects.create(name=f"short-{room.pk}", model="replay:short-finish.json",
                                        context_window=32_000, output_budget=2_000)
    RoomAgent.objects.create(room=room, agent=agent)
    return room, agent


@pytest.mark.timeout(7200)
def test_short_sessions_in_hundreds_on_2_and_4_workers(hub_workers, person, tmp_path):
    hub_workers.beat(fast=False)
    results: dict[int, list[Batch]] = {}
    running = []
    for workers in WORKERS:
        while len(running) < workers:
            # Connections kept, as `manage.py start` and compose run workers.
            running.append(hub_workers(fast=False, DB_CONN_MAX_AGE="60"))
        results[workers] = [run_batch(person, *fresh_room(person, f"Bench {workers}x{count}"), count, workers)
                            for count in SIZES]
    print(f"\nconcurrent short replay sessions (3 steps), one pool process per worker, beat and the sweep's worker, "
          f"default timings; {os.cpu_count()} CPUs")
    for workers, batches in results.items():
        print(f"{workers} workers:")
        for batch in batches:
            print(line(batch, batches[0]))
    if len(results) > 1:
        low, high = min(results), max(results)
        for small, big in zip(results[low], results[high], strict=True):
            print(f"  {small.sessions:>3} sessions, {high} workers against {low}: sessions/min "
                  f"×{big.per_minute / small.per_minute:.2f}, step p99 "
                  f"×{percentile(big.step_latency, 99) / percentile(small.step_latency, 99):.2f}")
    logs = "".join(p.read_text(errors="replace") for p in tmp_path.glob("*.log"))
    print(f"  in the workers' and beat's logs: {logs.count('database is locked')} × 'database is locked', "
          f"{logs.count('Traceback')} tracebacks, {logs.count('succeeded in')} tasks done; database "
          f"{connection.vendor}")
    for error, times in Counter(raised(logs)).most_common(5):
        print(f"    {times} × {error}")
    assert all(b.stuck == 0 and b.failed == 0 for batches in results.values() for b in batches)
