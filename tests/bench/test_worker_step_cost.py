"""Benchmark: what one step of a worker's session costs the hub itself, in statements
and CPU, at step 10 and step 300: a recorded agent in the demo room reads a file at
each step (``read_file`` runs in the worker's process; the recorded model answers at
once), the session run in this process by ``sessions.worker.run.run_session``, on a
real git worktree. A step is everything between two of the runner's commits: the
boundary's inputs, the request prepared, the tool call, the commit.

Run: .venv/bin/pytest -m bench tests/bench/test_worker_step_cost.py -s -n0 (with
DATABASE_URL set for PostgreSQL). Prints, around each of the two steps, the median of
five steps: statements (transaction control left out) and transactions of this thread's
connection (the lease's heartbeat has its own), and the process's CPU time (the tool
call and the recorded model included). Issue 26's goal for a step: 12 statements in one
transaction and 15 ms of CPU.

On the 2-core development box, this change against the code before it (a worktree of
the previous commit, run right before): 18 → 10 statements in 1 transaction at both
steps; 17.5 → 11.0 ms of CPU at step 10 (0.63×) and 21.2 → 20.5 ms at step 300 (0.97×:
a worker keeps its context between units already; what grows is the request prepared
from a longer history). Since the boundary reads the intent from the task's row (issue
32: the same on every machine) instead of the room's checkout: 11 statements. Since the
boundary's question of what waits is one statement written out, not three ORM
``Exists`` built and compiled each step, two runs alternating with the commit before:
13.2 → 11.1 ms at step 10 (0.84) and 14.9 → 12.3 ms at step 300 (0.83).
"""

from __future__ import annotations

import json
import statistics
import time

import pytest
from django.db import connection

from agents.models import AgentProfile
from rooms.models import RoomAgent
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from sessions.worker import runner
from sessions.worker.run import run_session

STEPS = (10, 300)
AROUND = 5  # steps measured at each
FILES = ("textstats.py", "test_textstats.py", "README.md")


def recording(steps: int) -> dict:
    turns = [{"text": f"Reading part {k} of {FILES[k % 3]}.", "tool_calls": [
        {"name": "read_file", "arguments": {"path": FILES[k % 3], "start": 1 + k % 5, "end": 20 + k % 7}}]}
        for k in range(steps)]
    return {"model": "recorded-reader", "turns": [*turns, {"text": "Done reading."}]}


@pytest.mark.bench
@pytest.mark.timeout(1800)
def test_a_worker_steps_cost_to_the_hub_at_step_10_and_300(person, demo_room, tmp_path, settings, monkeypatch):
    replays = tmp_path / "replays"
    replays.mkdir()
    (replays / "reader.json").write_text(json.dumps(recording(max(STEPS) + AROUND + 1)))
    settings.REPLAYS_DIR = replays
    settings.ATRIUM_WORKER_SLICE_SECONDS = 3600
    agent = AgentProfile.objects.create(name="reader", model="replay:reader.json", context_window=32_000,
                                        output_budget=2_000)
    RoomAgent.objects.create(room=demo_room, agent=agent)
    task = task_create(room=demo_room, actor=person, title="Read", objective="Read the code.")
    session = session_start(task=task, agent=agent, actor=person)

    steps: list[tuple[int, int, float]] = []
    since = [time.process_time()]

    def commit(self, result):
        went_on = real_commit(self, result)
        now = time.process_time()
        sql = [q["sql"] for q in connection.queries_log]
        statements = [s for s in sql if not s.startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN", "COMMIT"))]
        steps.append((len(statements), sum(s == "BEGIN" for s in sql), (now - since[0]) * 1000))
        connection.queries_log.clear()
        since[0] = time.process_time()
        return went_on

    real_commit = runner.SessionRunner.commit
    monkeypatch.setattr(runner.SessionRunner, "commit", commit)
    connection.force_debug_cursor = True  # the statements go to queries_log
    try:
        run_session(session.pk)
    finally:
        connection.force_debug_cursor = False
    # The demo's test still fails (nobody fixed it): the session ends in its check.
    assert len(steps) > max(STEPS) + AROUND
    print("\nstep | statements | transactions | hub CPU ms (median of 5)")
    for step in STEPS:
        around = steps[step:step + AROUND]
        print(f"{step:4d} | {statistics.median(s[0] for s in around):10.0f} | "
              f"{statistics.median(s[1] for s in around):12.0f} | {statistics.median(s[2] for s in around):8.1f}")
