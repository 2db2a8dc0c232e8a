"""Locks that hold across machines: PostgreSQL's session advisory locks, each taken on
a connection of its own that nothing else uses. The lock lasts as long as the holder's
block, and no longer than the holder: a process that dies closes its connection and the
server frees the lock at once. No file is involved, so processes that share nothing but
the database (workers on other machines, with data folders of their own) take turns.

A name becomes the lock's 64-bit key by a hash; two names that collided would only
take turns, never both hold.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import psycopg
from django.db import connections


class LockBusy(TimeoutError):
    """The lock was taken when it was asked for without waiting, or past the wait a
    caller allows."""


def lock_key(name: str) -> int:
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)


def _connection_params() -> dict[str, Any]:
    """The default database's, without Django's pool: a pooled connection would be
    handed to someone else with the lock still on it."""
    params = connections["default"].get_connection_params()
    params.pop("cursor_factory", None)
    params["application_name"] = "atrium-lock"
    return params


@contextmanager
def advisory_lock(name: str, *, wait: bool = True) -> Iterator[None]:
    """Hold ``name``'s lock for the block: waited for (``wait``), or LockBusy at once."""
    with psycopg.connect(**_connection_params(), autocommit=True) as conn:
        if wait:
            conn.execute("SELECT pg_advisory_lock(%s)", (lock_key(name),))
        elif not conn.execute("SELECT pg_try_advisory_lock(%s)", (lock_key(name),)).fetchone()[0]:
            raise LockBusy(f"the lock {name} is taken")
        yield  # closing the connection releases it, also after a failure in the block


@asynccontextmanager
async def advisory_lock_async(name: str, *, wait_seconds: float) -> AsyncIterator[None]:
    """``advisory_lock`` for the event loop: asked for without blocking, again and again,
    so a waiter holds no thread; LockBusy past ``wait_seconds``."""
    conn = await psycopg.AsyncConnection.connect(**_connection_params(), autocommit=True)
    try:
        loop = asyncio.get_running_loop()
        deadline, pause = loop.time() + wait_seconds, 0.01
        while not (await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (lock_key(name),))).fetchone())[0]:
            if loop.time() >= deadline:
                raise LockBusy(f"the lock {name} stayed taken for {wait_seconds:g} s")
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.25)
        yield
    finally:
        await conn.close()
