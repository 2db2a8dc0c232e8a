"""One writer at a time on a room's main checkout (merges, intent commits).

An advisory flock on a file inside the repository's .git directory: it serialises
every process on the machine that holds the repositories (workers and web alike),
and the kernel releases it if the holder dies.
"""

from __future__ import annotations

import asyncio
import fcntl
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path


@contextmanager
def room_repo_lock(repo_path: Path | str) -> Iterator[None]:
    with _flock(Path(repo_path) / ".git" / "atrium-room.lock"):
        yield


class LockBusy(TimeoutError):
    """The room lock stayed taken past the wait a caller allows."""


@contextmanager
def room_repo_lock_now(repo_path: Path | str) -> Iterator[None]:
    """``room_repo_lock`` if it is free right now (LockBusy if not), held in the calling
    thread for as long as the block runs."""
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
