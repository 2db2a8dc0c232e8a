"""One request of a gateway conversation at a time, on SQLite, without a transaction:
a write transaction open while the request is upstream would stop every writer of
the hub (a person's steer, every worker) for as long as the model takes.

Across processes, a fixed set of lock files (one per conversation would grow for
good): two conversations share one only by chance, one in ``STRIPES``. Within a
process, each conversation has its own lock and the process holds a stripe's file
lock for all its conversations on it at once, so the conversations one web process
serves never wait for each other. Another process's request on that stripe then
waits until none of them is in (``manage.py start`` runs one web process).
"""

from __future__ import annotations

import fcntl
import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

STRIPES = 4096


@dataclass
class _Users:
    lock: threading.Lock = field(default_factory=threading.Lock)
    count: int = 0


@dataclass
class _Stripe:
    taking: threading.Lock = field(default_factory=threading.Lock)  # one thread takes the file lock
    holders: int = 0
    handle: IO[str] | None = None


_registry = threading.Lock()
_conversations: dict[str, _Users] = {}
_stripes: dict[tuple[Path, int], _Stripe] = {}


@contextmanager
def one_request_at_a_time(folder: Path, name: str) -> Iterator[None]:
    """Held while ``name``'s request is served; ``folder`` holds the lock files."""
    with _registry:
        users = _conversations.setdefault(name, _Users())
        users.count += 1
    try:
        with users.lock, _stripe_held(folder, int(hashlib.sha256(name.encode()).hexdigest(), 16) % STRIPES):
            yield
    finally:
        with _registry:
            users.count -= 1
            if not users.count:
                del _conversations[name]


@contextmanager
def _stripe_held(folder: Path, number: int) -> Iterator[None]:
    with _registry:
        stripe = _stripes.setdefault((folder, number), _Stripe())
    with stripe.taking:
        if stripe.handle is None:
            folder.mkdir(parents=True, exist_ok=True)
            handle = open(folder / f"gateway-{number}.lock", "a+")  # noqa: SIM115 closed on the last release
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            except BaseException:
                handle.close()
                raise
            stripe.handle = handle
        stripe.holders += 1
    try:
        yield
    finally:
        with stripe.taking:
            stripe.holders -= 1
            if not stripe.holders and stripe.handle is not None:
                stripe.handle.close()  # closing the file lets the lock go
                stripe.handle = None
