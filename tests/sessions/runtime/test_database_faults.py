"""Issue 28: a lost database connection failed running sessions for good ("internal error:
OperationalError: terminating connection due to administrator command"). Which errors
waiting fixes (the worker gives the session back, it resumes on a fresh connection) and
which it does not (a statement timeout, a missing table: the session fails); the
counting agent the fault tests run (test_database_restarts.py kills the connections
and restarts the server under one, test_disk_full.py fills its disk)."""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.db import OperationalError

from agents.models import AgentProfile
from rooms.models import RoomAgent
from sessions.models import ApprovalRule
from sessions.worker.faults import connection_lost


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
