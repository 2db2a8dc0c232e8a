"""Channel-layer sends from sync code: queued in order, sent by one event loop per
process, never waited for by the caller.

``async_to_sync(layer.group_send)`` from a thread with no event loop (a Celery worker,
a management command) starts a new loop for every call, and the Redis layer keeps its
connections per loop: every broadcast opened and closed a connection (13% of a
worker's time). Under Daphne's sync bridge it hopped back onto the server's loop and
held the request until Redis answered (17% of a gateway request's time). Here every
sync caller's send goes to one loop per process, run by a daemon thread, with its
connection pool: queued and sent one at a time in the order they were queued (a
session's events reach its page in order), while the caller goes on.

A send that fails, or hangs past SEND_TIMEOUT_SECONDS, is logged and dropped, as are
sends past QUEUED_MAX while Redis is away: the rows are committed, and clients catch
up from the database when they reconnect. What is queued when a process ends is sent
first where that can still be done, for up to FLUSH_SECONDS: at interpreter exit (a
Redis named by its host name cannot be reached any more then: its address is looked up
in a thread, which Python refuses by then) and when a Celery pool process ends (it
leaves by ``os._exit``, which skips exit handlers).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
from collections import deque
from typing import Any

from celery.signals import worker_process_shutdown
from channels.layers import get_channel_layer

log = logging.getLogger(__name__)

SEND_TIMEOUT_SECONDS = 10.0
QUEUED_MAX = 10_000
FLUSH_SECONDS = 5.0


class _Sender:
    """This process's broadcast loop and the sends queued on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self._queued: deque[tuple[str, dict[str, Any]]] = deque()  # touched on the loop only
        self._draining = False
        self._unsent = 0  # queued and not yet sent or given up on
        self._dropped = 0  # past QUEUED_MAX since the queue was last below it
        self._done = threading.Condition()
        threading.Thread(target=self.loop.run_forever, name="atrium-broadcast", daemon=True).start()

    def put(self, group: str, event: dict[str, Any]) -> None:
        with self._done:
            if self._unsent >= QUEUED_MAX:
                self._dropped += 1
                if self._dropped == 1:  # once while it stays full: Redis is away, not each event
                    log.warning("broadcast queue full (%s unsent): events are dropped until it drains", self._unsent)
                return
            if self._dropped:
                log.warning("broadcast queue drains again: %s events were dropped", self._dropped)
                self._dropped = 0
            self._unsent += 1
        self.loop.call_soon_threadsafe(self._enqueue, group, event)

    def flush(self, timeout: float) -> bool:
        """Wait until every send queued so far left (or was given up on); False: not
        within ``timeout`` seconds."""
        with self._done:
            return self._done.wait_for(lambda: self._unsent == 0, timeout)

    def _enqueue(self, group: str, event: dict[str, Any]) -> None:
        self._queued.append((group, event))
        if not self._draining:
            self._draining = True
            self.loop.create_task(self._drain())

    async def _drain(self) -> None:
        try:
            while self._queued:
                group, event = self._queued.popleft()
                try:
                    await asyncio.wait_for(get_channel_layer().group_send(group, event), SEND_TIMEOUT_SECONDS)
                # A timeout, and a cancel from inside the layer: the next sends must not wait behind it.
                except (Exception, asyncio.CancelledError):
                    log.exception("broadcast to %s failed", group)
                finally:
                    with self._done:
                        self._unsent -= 1
                        self._done.notify_all()
        finally:
            self._draining = False


_lock = threading.Lock()
_sender: _Sender | None = None


def _process_sender() -> _Sender:
    """This process's sender, started on first use (again after a fork: a forked child
    has the parent's loop object but not its thread)."""
    global _sender
    with _lock:
        if _sender is None or _sender.pid != os.getpid() or _sender.loop.is_closed():
            _sender = _Sender()
        return _sender


def _shared_loop() -> asyncio.AbstractEventLoop:
    return _process_sender().loop


def group_send(group: str, event: dict[str, Any]) -> None:
    """Queue ``event`` for ``group``, after every send queued before it in this process."""
    if get_channel_layer() is None:  # pragma: no cover - settings always configure one
        return
    _process_sender().put(group, event)


def flush(timeout: float = FLUSH_SECONDS) -> bool:
    """Wait until this process's queued sends left; False: some had not in ``timeout``."""
    sender = _sender
    return sender is None or sender.pid != os.getpid() or sender.flush(timeout)


atexit.register(flush)
worker_process_shutdown.connect(lambda **_: flush(), weak=False)
