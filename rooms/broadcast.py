"""Channel-layer sends from sync code, through one event loop per process.

``async_to_sync(layer.group_send)`` from a thread with no event loop (a Celery worker,
a management command) starts a new loop for every call, and the Redis layer keeps its
connections per loop: every broadcast opened and closed a connection (13% of a
worker's time). Here such callers share one loop, run by a daemon thread, and its
connection pool. Code already running under an event loop's sync bridge (Daphne's
``database_sync_to_async``) sends on that loop, as before.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

from asgiref.sync import SyncToAsync, async_to_sync
from channels.layers import get_channel_layer

SEND_TIMEOUT_SECONDS = 10.0

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_loop_pid = 0


def _shared_loop() -> asyncio.AbstractEventLoop:
    """This process's broadcast loop, started on first use (again after a fork: a forked
    child has the parent's loop object but not its thread)."""
    global _loop, _loop_pid
    with _lock:
        if _loop is None or _loop_pid != os.getpid() or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="atrium-broadcast", daemon=True).start()
            _loop, _loop_pid = loop, os.getpid()
        return _loop


def group_send(group: str, event: dict[str, Any]) -> None:
    """Send ``event`` to ``group``; raises what the layer raises (callers log it)."""
    layer = get_channel_layer()
    if layer is None:  # pragma: no cover - settings always configure one
        return
    local = SyncToAsync.threadlocal
    if getattr(local, "main_event_loop_pid", None) == os.getpid() and getattr(local, "main_event_loop", None):
        async_to_sync(layer.group_send)(group, event)  # under an event loop's sync bridge: its loop
        return
    future = asyncio.run_coroutine_threadsafe(layer.group_send(group, event), _shared_loop())
    try:
        future.result(timeout=SEND_TIMEOUT_SECONDS)
    except TimeoutError:
        future.cancel()  # a hung Redis must not pile sends up on the shared loop
        raise
