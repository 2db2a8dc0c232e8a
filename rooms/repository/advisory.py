"""Locks that hold across machines: PostgreSQL's session advisory locks, each taken on
a connection of its own that nothing else uses. The lock lasts as long as the holder's
block, and no longer than the holder: a process that dies closes its connection and the
server frees the lock at once. No file is involved, so processes that share nothing but
the database (workers on other machines, with data folders of their own) take turns.

The connection must reach PostgreSQL itself: a pooler in transaction mode (PgBouncer)
would keep the lock on a server connection after the holder is gone. A name becomes the
lock's 64-bit key by a hash; two names that collided would only take turns.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any

import psycopg
from django.db import connections

log = logging.getLogger(__name__)

# A lock's connection idles for as long as git runs, and waits for as long as the lock
# is held elsewhere: no timeout of the server's (set for the role or the database) may
# end it, or the lock would go with it unnoticed; keepalives tell a dead peer from a
# quiet one.
_SESSION = "-c idle_session_timeout=0 -c idle_in_transaction_session_timeout=0 -c lock_timeout=0 -c statement_timeout=0"


class LockBusy(TimeoutError):
    """The lock was taken when it was asked for without waiting, or past the wait a
    caller allows, or the database could not be asked."""


def lock_key(name: str) -> int:
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)


def _connection_params() -> dict[str, Any]:
    """The default database's, without Django's pool: a pooled connection would be
    handed to someone else with the lock still on it."""
    params = connections["default"].get_connection_params()
    params.pop("cursor_factory", None)
    params["options"] = f"{params.get('options', '')} {_SESSION}".strip()
    params.update(application_name="atrium-lock", autocommit=True,
                  keepalives=1, keepalives_idle=30, keepalives_interval=10, keepalives_count=3)
    return params


@contextmanager
def advisory_lock(name: str, *, wait: bool = True) -> Iterator[None]:
    """Hold ``name``'s lock for the block: waited for (``wait``), or LockBusy at once."""
    key = lock_key(name)
    try:
        conn = psycopg.connect(**_connection_params())
    except psycopg.OperationalError as exc:
        if wait:
            raise
        raise LockBusy(f"the lock {name} could not be asked for: {exc}") from exc
    with conn:
        if not wait:
            if not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                raise LockBusy(f"the lock {name} is taken")
        else:
            try:
                conn.execute("SELECT pg_advisory_lock(%s)", (key,))
            except BaseException:
                conn.cancel_safe()  # interrupted (a time limit): its server process stops waiting too
                raise
        try:
            yield
        finally:
            released = False
            with suppress(psycopg.Error):
                released = conn.execute("SELECT pg_advisory_unlock(%s)", (key,)).fetchone()[0]
            if not released:
                _lost(name)


@asynccontextmanager
async def advisory_lock_async(name: str, *, wait_seconds: float) -> AsyncIterator[None]:
    """``advisory_lock`` for the event loop: waited for in the server's queue (a poller
    would never get in while blocking waiters queue) up to ``wait_seconds``, then
    LockBusy; a cancelled waiter leaves the queue."""
    key = lock_key(name)
    try:
        conn = await psycopg.AsyncConnection.connect(**_connection_params())
    except psycopg.OperationalError as exc:
        raise LockBusy(f"the lock {name} could not be asked for: {exc}") from exc
    async with conn:
        await conn.execute(f"SET lock_timeout = {max(1, round(wait_seconds * 1000))}")
        try:
            await conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        except psycopg.errors.LockNotAvailable:
            raise LockBusy(f"the lock {name} stayed taken for {wait_seconds:g} s") from None
        except BaseException:
            await conn.cancel_safe()
            raise
        await conn.execute("SET lock_timeout = 0")
        try:
            yield
        finally:
            released = False
            with suppress(psycopg.Error):
                released = (await (await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))).fetchone())[0]
            if not released:
                _lost(name)


def _lost(name: str) -> None:
    log.error("The lock %s was lost while it was held (its database connection ended): another process may "
              "have taken it meanwhile.", name)
