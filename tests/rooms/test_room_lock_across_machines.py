"""The room lock between processes that share nothing but PostgreSQL: each has a data
folder of its own (its own copy of the room's repository, so no lock file in common),
as workers on two machines would. One takes the lock and holds it; the other finds it
taken, waits, and gets it the moment the holder is killed (its connection dies, and the
server frees the lock: no stale lock blocks the room)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from rooms.repository.git import git
from rooms.repository.lock import LockBusy, room_repo_lock, room_repo_lock_async
from tests.conftest import hub_process_env

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(connection.vendor != "postgresql",
                                 reason="SQLite installs keep the flock: one machine by nature")]

# Takes the room lock as argv[1] says ("hold", "now" or "wait") on argv[2]'s repository
# and says what happened on stdout, line by line.
LOCKER = """
import sys, time, django
django.setup()
from rooms.repository.lock import LockBusy, room_repo_lock, room_repo_lock_now
how, repo = sys.argv[1], sys.argv[2]
if how == "now":
    try:
        with room_repo_lock_now(repo):
            print("held", flush=True)
    except LockBusy as exc:
        print("busy:", exc, flush=True)
else:
    print("asking", flush=True)
    with room_repo_lock(repo):
        print("held", time.monotonic(), flush=True)
        if how == "hold":
            time.sleep(600)
"""


def _machine(tmp_path: Path, name: str) -> tuple[Path, dict[str, str]]:
    """A data folder of its own with the room's repository in it."""
    data = tmp_path / name
    repo = data / "repos" / "room"
    repo.mkdir(parents=True)
    git("init", "--quiet", "--initial-branch", "main", cwd=repo)
    return repo, hub_process_env(ATRIUM_DATA_DIR=str(data))


def _locker(how: str, repo: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", LOCKER, how, str(repo)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _advisory_waiters() -> int:
    with connection.cursor() as cursor:
        # This run's database only: other test processes lock in theirs.
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = "
                       "(SELECT oid FROM pg_database WHERE datname = current_database())")
        return cursor.fetchone()[0]


def _until(condition, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _line(process: subprocess.Popen[str]) -> str:
    line = process.stdout.readline()
    assert line, process.stderr.read()
    return line.strip()


def test_a_room_lock_holds_across_data_folders_and_frees_itself_when_its_holder_dies(tmp_path):
    repo_a, env_a = _machine(tmp_path, "machine-a")
    repo_b, env_b = _machine(tmp_path, "machine-b")
    holder = _locker("hold", repo_a, env_a)
    waiter = None
    try:
        assert _line(holder) == "asking"
        assert _line(holder).startswith("held")

        asked_now = _locker("now", repo_b, env_b)
        out, err = asked_now.communicate(timeout=60)
        assert out.startswith("busy: the lock atrium-room:room is taken"), err

        waiter = _locker("wait", repo_b, env_b)
        assert _line(waiter) == "asking"
        _until(lambda: _advisory_waiters() == 1)  # in the server's queue, behind the holder
        assert waiter.poll() is None

        holder.kill()  # SIGKILL: no release of its own, only its connection closing
        killed_at = time.monotonic()
        holder.wait(timeout=10)
        held = _line(waiter)
        assert held.startswith("held")
        assert float(held.split()[1]) - killed_at < 5.0
    finally:
        for process in (holder, waiter):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(timeout=10)


def test_rooms_of_other_names_do_not_wait_for_each_other(tmp_path):
    repo, env = _machine(tmp_path, "machine-a")
    other = tmp_path / "machine-b" / "repos" / "another-room"
    other.mkdir(parents=True)
    git("init", "--quiet", "--initial-branch", "main", cwd=other)
    holder = _locker("hold", repo, env)
    try:
        assert _line(holder) == "asking"
        assert _line(holder).startswith("held")
        out, err = _locker("now", other, hub_process_env(ATRIUM_DATA_DIR=str(tmp_path / "machine-b"))).communicate(
            timeout=60)
        assert out.strip() == "held", err
    finally:
        holder.kill()
        holder.wait(timeout=10)


def test_a_push_waits_in_the_queue_and_is_told_busy_past_its_wait(tmp_path, settings):
    repo, env = _machine(tmp_path, "machine-a")
    settings.REPOS_DIR = repo.parent  # this process pushes to the same room
    holder = _locker("hold", repo, env)
    try:
        assert _line(holder) == "asking"
        assert _line(holder).startswith("held")

        async def push(wait_seconds: float) -> float:
            started = time.monotonic()
            async with room_repo_lock_async(repo, wait_seconds=wait_seconds):
                return time.monotonic() - started

        started = time.monotonic()
        with pytest.raises(LockBusy, match="stayed taken for 0.5 s"):
            asyncio.run(push(0.5))
        assert 0.4 < time.monotonic() - started < 5

        async def push_while_the_holder_dies() -> float:
            waiting = asyncio.ensure_future(push(60))
            await asyncio.get_running_loop().run_in_executor(None, _until, lambda: _advisory_waiters() == 1)
            holder.kill()
            return await waiting

        assert asyncio.run(push_while_the_holder_dies()) < 30
    finally:
        holder.kill()
        holder.wait(timeout=10)
    assert _advisory_waiters() == 0


def test_a_lock_whose_connection_is_ended_while_held_is_reported_lost(tmp_path, caplog):
    repo, _ = _machine(tmp_path, "machine-a")
    with room_repo_lock(repo), connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE application_name = 'atrium-lock' AND datname = current_database()")
        assert cursor.fetchone() == (True,)
    assert "was lost while it was held" in caplog.text
