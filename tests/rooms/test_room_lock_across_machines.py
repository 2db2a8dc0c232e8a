"""The room lock between processes that share nothing but PostgreSQL: each has a data
folder of its own (its own copy of the room's repository, so no lock file in common),
as workers on two machines would. One takes the lock and holds it; the other finds it
taken, waits, and gets it the moment the holder is killed (its connection dies, and the
server frees the lock: no stale lock blocks the room)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from rooms.repository.git import git
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
        time.sleep(1.0)
        assert waiter.poll() is None  # still waiting behind the holder

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
