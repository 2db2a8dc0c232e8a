"""One writer at a time on a room's main checkout (merges, intent commits).

On PostgreSQL, an advisory lock of the database's (``rooms.repository.advisory``), named
after the room's repository: it serialises every process that uses the hub's database,
on any machine, and the server releases it when its holder's connection dies. On SQLite
(one machine by nature), a flock on a file inside the repository's .git directory:
every process on the machine takes turns, and the kernel releases it if the holder dies.
A worker's own copy of a room's repository (``rooms.repository.mirror``) is its
machine's alone: a flock there too, whatever the database.
"""

from __future__ import annotations

import asyncio
import fcntl
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection

from rooms.repository.advisory import LockBusy, advisory_lock, advisory_lock_async

__all__ = ["LockBusy", "room_repo_lock", "room_repo_lock_async", "room_repo_lock_now", "task_intent_lock"]


def _in_database(repo_path: Path | str) -> bool:
    return connection.vendor == "postgresql" and not _a_workers_copy(repo_path)


def _a_workers_copy(repo_path: Path | str) -> bool:
    return Path(repo_path).resolve().is_relative_to(Path(settings.COPIES_DIR).resolve())


def _room_lock_name(repo_path: Path | str) -> str:
    """The same room's name on every machine: its folder under the repositories folder,
    wherever each machine keeps that."""
    path = Path(repo_path).resolve()
    repos = Path(settings.REPOS_DIR).resolve()
    return f"atrium-room:{path.relative_to(repos) if path.is_relative_to(repos) else path}"


@contextmanager
def room_repo_lock(repo_path: Path | str) -> Iterator[None]:
    if _in_database(repo_path):
        with advisory_lock(_room_lock_name(repo_path)):
            yield
        return
    with _flock(Path(repo_path) / ".git" / "atrium-room.lock"):
        yield


@contextmanager
def room_repo_lock_now(repo_path: Path | str) -> Iterator[None]:
    """``room_repo_lock`` if it is free right now (LockBusy if not), held in the calling
    thread for as long as the block runs."""
    if _in_database(repo_path):
        with advisory_lock(_room_lock_name(repo_path), wait=False):
            yield
        return
    with open(Path(repo_path) / ".git" / "atrium-room.lock", "a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise LockBusy("the room lock is taken") from exc
        yield


@asynccontextmanager
async def room_repo_lock_async(repo_path: Path | str, *, wait_seconds: float) -> AsyncIterator[None]:
    """``room_repo_lock`` for the event loop (a push over the git remote, for as long as
    git receives it): asked for without blocking, again and again, so a waiter holds no
    thread (a cancelled one nothing at all); LockBusy past ``wait_seconds``."""
    if _in_database(repo_path):
        async with advisory_lock_async(_room_lock_name(repo_path), wait_seconds=wait_seconds):
            yield
        return
    handle = open(Path(repo_path) / ".git" / "atrium-room.lock", "a+")  # noqa: SIM115 (closed below)
    try:
        deadline = asyncio.get_running_loop().time() + wait_seconds
        pause = 0.01
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if asyncio.get_running_loop().time() >= deadline:
                    raise LockBusy(f"the room's repository stayed busy for {wait_seconds:g} s") from None
                await asyncio.sleep(pause)
                pause = min(pause * 2, 0.25)
        yield
    finally:
        handle.close()  # closing the descriptor releases the lock


@contextmanager
def task_intent_lock(repo_path: Path | str, task_id: int) -> Iterator[None]:
    """One editor at a time of a task's intent, across its commit and its row (which run
    apart: git never runs inside a database transaction). Taken before the room lock."""
    if _in_database(repo_path):
        with advisory_lock(f"atrium-task:{task_id}"):
            yield
        return
    with _flock(Path(repo_path) / ".git" / f"atrium-task-{task_id}.lock"):
        yield


@contextmanager
def _flock(lock_path: Path) -> Iterator[None]:
    with open(lock_path, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
