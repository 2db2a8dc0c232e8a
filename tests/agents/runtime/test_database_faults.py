"""Issue 28: a lost database connection failed running sessions for good ("internal error:
OperationalError: terminating connection due to administrator command"). Now the worker
gives such a session back (its unit rolled back, every tool call recorded by id) and it
resumes on a fresh connection: the session ends as it would have, no command run twice,
none lost. A real worker against the real PostgreSQL, its connections killed over and
over while a session of 40 steps runs. An error that waiting does not fix (a statement
timeout, a missing table) still fails the session, after no retries."""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.db import OperationalError, connection

from agents.models import AgentProfile, ApprovalRule, RoomAgent, SessionEvent
from agents.runtime.faults import connection_lost
from agents.services import session_start, task_create
from tests.agents.runtime.test_workers import ended, wait_for

STEPS = 40
BLIPS = 8


def lines_of(session) -> list[str]:
    session.refresh_from_db(fields=["worktree_path"])
    path = Path(session.worktree_path or "/nonexistent", "runs.txt")
    return path.read_text().split() if path.exists() else []


def counting_agent(room, steps: int) -> AgentProfile:
    """A recorded agent in ``room`` whose ``steps`` shell calls each append their number
    to runs.txt (allowed, no check): a command run twice or lost shows in the file."""
    ApprovalRule.objects.create(room=room, tool="shell", decision="allow")
    room.check_command = ""
    room.save()
    recording = f"counting-{uuid.uuid4().hex[:8]}.json"
    (Path(settings.REPLAYS_DIR) / recording).write_text(json.dumps({"turns": [
        *({"text": f"Step {n}.", "tool_calls": [{"name": "shell", "arguments": {"command": f"echo {n} >> runs.txt"}}]}
          for n in range(steps)),
        {"text": "Done."},
    ]}))
    agent = AgentProfile.objects.create(name="counter", model=f"replay:{recording}", context_window=32_000,
                                        output_budget=2_000)
    RoomAgent.objects.create(room=room, agent=agent)
    return agent


def _kill_other_connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        return cursor.fetchone()[0]


@pytest.mark.parametrize(("error", "vendor", "waiting_fixes_it"), [
    (psycopg.errors.AdminShutdown("terminating connection due to administrator command"), "postgresql", True),
    (psycopg.OperationalError("server closed the connection unexpectedly"), "postgresql", True),  # no answer
    (psycopg.errors.SerializationFailure("could not serialize access"), "postgresql", True),
    (psycopg.errors.DiskFull("could not extend file"), "postgresql", True),
    (psycopg.errors.QueryCanceled("canceling statement due to statement timeout"), "postgresql", False),
    (psycopg.errors.ProgramLimitExceeded("index row size exceeds maximum"), "postgresql", False),
    (sqlite3.OperationalError("database is locked"), "sqlite", True),
    (sqlite3.OperationalError("no such table: agents_session"), "sqlite", False),
])
def test_only_what_waiting_fixes_gives_a_session_back(error, vendor, waiting_fixes_it):
    wrapped = OperationalError(str(error))
    wrapped.__cause__ = error  # as Django raises it
    assert connection_lost(wrapped, vendor) is waiting_fixes_it


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="kills PostgreSQL's connections")
def test_a_session_outlives_its_database_connections_being_killed(hub_workers, person, demo_room):
    agent = counting_agent(demo_room, STEPS)
    worker = hub_workers()
    hub_workers.beat()  # as `manage.py start` runs them: the sweep resumes what no turn reaches
    task = task_create(room=demo_room, actor=person, title="Count", objective="Count to 40")
    session = session_start(task=task, agent=agent, actor=person)
    wait_for(lambda: len(lines_of(session)) >= 3, 120, "the session to be under way", [worker])
    killed = 0
    for _ in range(BLIPS):  # a blip every second and a half while it runs
        if ended(session):
            break
        killed += _kill_other_connections()
        time.sleep(1.5)
    wait_for(lambda: ended(session), 180, "the session to end", [worker])
    assert session.state == "succeeded", session.reason
    assert lines_of(session) == [str(n) for n in range(STEPS)]  # each command once, none lost
    given_back = SessionEvent.objects.filter(session=session, kind="session.given_back")
    assert killed and given_back.exists(), (killed, worker.hub_process.log_tail())
