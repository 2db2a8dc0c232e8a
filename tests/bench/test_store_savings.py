"""Benchmark: the room page's shared-store panel on a room with long history.

Run: .venv/bin/pytest -m bench tests/bench/test_store_savings.py -s

100 sessions of 1,000 observations each (BENCH_STORE_SESSIONS, BENCH_STORE_OBSERVATIONS),
half of every session's reads the same 200 files the others read, are inserted in bulk;
then ``room_store_savings`` is timed and its plan printed (PostgreSQL: EXPLAIN ANALYZE).
"""

from __future__ import annotations

import os
import statistics
import time

import pytest
from django.db import connection

from observations.models import Blob
from sessions.ledger.selectors import STORE_SAVINGS_SQL, room_store_savings
from sessions.models import Observation, Session, Task
from tests.rooms.factories import make_agent, make_room, make_user

SESSIONS = int(os.environ.get("BENCH_STORE_SESSIONS", "100"))
PER_SESSION = int(os.environ.get("BENCH_STORE_OBSERVATIONS", "1000"))
SHARED_FILES = 200
SIZE = 4_000

pytestmark = [pytest.mark.bench, pytest.mark.django_db(transaction=True)]


def test_room_store_savings_on_a_long_room():
    owner = make_user("bench")
    room = make_room(owner, name="Store bench")
    agent = make_agent(name="bencher")
    task = Task.objects.create(room=room, title="t", objective="o", created_by=owner)
    # Another room's rows, so the query has to pick this room's out of more.
    other = make_room(owner, name="Other room")
    other_task = Task.objects.create(room=other, title="t", objective="o", created_by=owner)
    shared = [f"{n:064x}" for n in range(SHARED_FILES)]
    Blob.objects.bulk_create([Blob(sha256=s, size=SIZE, token_estimate=1_000, data=b"") for s in shared])
    for number in range(SESSIONS):
        for room_, task_ in ((room, task), (other, other_task)):
            session = Session.objects.create(task=task_, agent=agent, attempt=number + 1)
            own = [f"{session.pk:032x}{n:032x}" for n in range(PER_SESSION // 2)]
            Blob.objects.bulk_create([Blob(sha256=s, size=SIZE, token_estimate=1_000, data=b"") for s in own])
            blobs = [shared[(n * 7 + number) % SHARED_FILES] for n in range(PER_SESSION // 2)] + own
            Observation.objects.bulk_create([
                Observation(room=room_, session=session, seq=n, step=n, call_id=f"c{n}", tool="read_file",
                            arguments={"path": f"f{n}.py"}, args_key="k", blob_id=blob, size=SIZE,
                            token_estimate=1_000, receipt_text="r" * 200)
                for n, blob in enumerate(blobs)
            ], batch_size=2_000)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":  # as autovacuum would: the index alone answers
            cursor.execute("VACUUM ANALYZE observations_observation")
    times = []
    for _ in range(5):
        start = time.perf_counter()
        savings = room_store_savings(room.pk)
        times.append((time.perf_counter() - start) * 1000)
    print(f"\n{SESSIONS} sessions x {PER_SESSION} observations: {statistics.median(times):.1f} ms median, "
          f"max {max(times):.1f} ms; {savings}")
    if connection.vendor == "postgresql":
        sql = STORE_SAVINGS_SQL.format(table=connection.ops.quote_name(Observation._meta.db_table))
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, [room.pk])
            print("\n".join(line for (line,) in cursor.fetchall()))
    assert savings.observations == SESSIONS * PER_SESSION
    assert savings.stored_bytes == (SHARED_FILES + SESSIONS * PER_SESSION // 2) * SIZE
