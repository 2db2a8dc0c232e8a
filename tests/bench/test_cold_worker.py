"""Benchmark: a session's first step on a worker of another machine (issue 32), the part
that is the room's repository: ask the hub's git remote for main, fetch it, make the
session's worktree. Cold: the worker has no copy of the room yet (a new machine, or a
room it never ran). Warm: its copy holds the room already, so only the new session's
worktree is made. Beside both, a worker that shares the hub's folders (the worktree
made in the room's repository itself), measured in the same run.

Run: .venv/bin/pytest -m bench tests/bench/test_cold_worker.py -s -n0 (PostgreSQL)
Prints the medians and the ratios cold / warm and warm / shared, at 100 and 5,000 files,
and what the checkpoint of a unit of tool calls costs there (commit and push, against
the commit alone).
"""

from __future__ import annotations

import shutil
import statistics
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from rooms.repository.prepare import TemplateRepository
from rooms.repository.worktrees import worktree_commit
from rooms.services import room_create
from sessions.models import Session, Task
from sessions.worker.room_git import CopyRoomGit, RoomGit
from tests.rooms.factories import make_agent, make_user

pytestmark = [pytest.mark.bench, pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(connection.vendor != "postgresql", reason="a worker elsewhere shares PostgreSQL")]

RUNS = 7


def _project(folder: Path, files: int) -> Path:
    """``files`` source files of about 2 KiB in folders of 50, like a small project's."""
    for number in range(files):
        path = folder / f"pkg{number // 50}" / f"module_{number}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"def f_{number}_{line}(x):\n    return x + {line}\n" for line in range(60)))
    return folder


@pytest.mark.parametrize("files", [100, 5000])
def test_a_sessions_first_step_on_a_cold_worker_against_a_warm_one(daphne_server, tmp_path, files):
    owner = make_user()
    room = room_create(owner=owner, name=f"Cold {files}", source=TemplateRepository(_project(tmp_path / "src", files)))
    task = Task.objects.create(room=room, title="Work", objective="Work", created_by=owner)
    agent = make_agent()
    worker = "worker@elsewhere:1"

    def session(attempt: int) -> Session:
        return Session.objects.create(task=task, agent=agent, attempt=attempt, state="running", lease_owner=worker,
                                      lease_expires_at=timezone.now() + timedelta(minutes=30))

    attempts = iter(range(1, 1000))
    machine = tmp_path / "machine"

    def first_step(kind: str) -> float:
        made = session(next(attempts))
        if kind == "cold":
            shutil.rmtree(machine, ignore_errors=True)
        started = time.perf_counter()
        with override_settings(HUB_URL=daphne_server.url, COPIES_DIR=machine / "copies",
                               WORKTREES_DIR=machine / "worktrees"):
            git = CopyRoomGit(room, session_id=made.pk, owner=worker) if kind != "shared" else RoomGit(room)
            worktree = git.worktree(made.pk)
        elapsed = time.perf_counter() - started
        assert (worktree.path / "pkg0" / "module_0.py").is_file()
        return elapsed

    first_step("cold")  # Daphne and git warmed up, the hub's packs made
    cold = statistics.median(first_step("cold") for _ in range(RUNS))
    warm = statistics.median(first_step("warm") for _ in range(RUNS))
    shared = statistics.median(first_step("shared") for _ in range(RUNS))
    print(f"\n{files} files: a session's first step, the room's repository part (median of {RUNS}): "
          f"cold worker {cold * 1000:.0f} ms, warm {warm * 1000:.0f} ms, sharing the hub's folders "
          f"{shared * 1000:.0f} ms; cold / warm = {cold / warm:.2f}x, warm / shared = {warm / shared:.2f}x")


def test_what_a_unit_of_tool_calls_adds_on_a_worker_elsewhere(daphne_server, tmp_path):
    """Each unit's files are committed and pushed there (the checkpoint), so a worker that
    takes the session over finds them; beside it, the commit alone, and the look at a
    worktree in which nothing changed (most units: a model call)."""
    owner = make_user()
    room = room_create(owner=owner, name="Checkpoints", source=TemplateRepository(_project(tmp_path / "src", 100)))
    task = Task.objects.create(room=room, title="Work", objective="Work", created_by=owner)
    worker = "worker@elsewhere:1"
    made = Session.objects.create(task=task, agent=make_agent(), state="running", lease_owner=worker,
                                  lease_expires_at=timezone.now() + timedelta(minutes=30))
    machine = tmp_path / "machine"
    with override_settings(HUB_URL=daphne_server.url, COPIES_DIR=machine / "copies",
                           WORKTREES_DIR=machine / "worktrees"):
        copy = CopyRoomGit(room, session_id=made.pk, owner=worker)
        worktree = copy.worktree(made.pk)
        steps = iter(range(10_000))

        def unit(push: bool) -> float:
            step = next(steps)
            (worktree.path / "pkg0" / "module_0.py").write_text(f"STEP = {step}\n")
            started = time.perf_counter()
            worktree_commit(worktree=worktree, message=f"step {step}")
            if push:
                copy.committed(worktree.branch)
            return time.perf_counter() - started

        def unchanged() -> float:
            started = time.perf_counter()
            assert worktree_commit(worktree=worktree, message="nothing") is None
            return time.perf_counter() - started

        unit(True)
        alone = statistics.median(unit(False) for _ in range(RUNS * 4))
        pushed = statistics.median(unit(True) for _ in range(RUNS * 4))
        idle = statistics.median(unchanged() for _ in range(RUNS * 4))
    print(f"\na unit's checkpoint (median of {RUNS * 4}): commit {alone * 1000:.0f} ms, commit and push "
          f"{pushed * 1000:.0f} ms ({pushed / alone:.2f}x); a unit that changed nothing {idle * 1000:.0f} ms")
