"""One writer at a time on a room's main checkout (merges, intent commits).

An advisory flock on a file inside the repository's .git directory: it serialises
every process on the machine that holds the repositories (workers and web alike),
and the kernel releases it if the holder dies.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def room_repo_lock(repo_path: Path | str) -> Iterator[None]:
    with _flock(Path(repo_path) / ".git" / "atrium-room.lock"):
        yield


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
