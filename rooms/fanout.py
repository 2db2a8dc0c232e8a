"""One channel-layer membership per process and group; the process fans out in memory.

With a membership per socket, every broadcast to a room watched by N sockets in one
Daphne is N messages in Redis, each popped by the process's one receive loop with its
own round trip: at 200 sockets and 50 posts a second that loop falls seconds behind.
Here the first socket of a group in a process joins the group with one channel of the
process's own; every event read from it is put in the inbox of each of the process's
sockets in that group, and the last socket to leave takes the membership away.

The membership is renewed every ``RENEW_SECONDS`` (the layer expires one after its
``group_expiry``, a day by default) and again after a failed read (a Redis restarted
empty has forgotten it).

An inbox holds at most ``INBOX_CAPACITY`` events, as a socket's channel did (the Redis
layer's capacity). A socket that falls that far behind is told so (``BEHIND``) and
closes: its page reconnects and replays what it missed from the database, rather than
silently missing a room's last rows or a removal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from typing import Any

log = logging.getLogger(__name__)

INBOX_CAPACITY = 100
RETRY_SECONDS = 1.0  # after a failed read (Redis away), before reading again
RENEW_SECONDS = 3600.0
BEHIND = {"type": "stream.behind"}

Inbox = asyncio.Queue


class GroupFanout:
    """The memberships of one event loop's sockets; use ``fanout_for(layer)``."""

    def __init__(self, layer: Any) -> None:
        self.layer = layer
        self._inboxes: dict[str, set[Inbox]] = {}
        self._readers: dict[str, tuple[str, asyncio.Task]] = {}
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}  # per group, with its users
        self._renewer: asyncio.Task | None = None

    async def join(self, group: str, inbox: Inbox) -> None:
        """From now on, ``inbox`` gets every event sent to ``group``."""
        async with self._group_lock(group):
            if group not in self._readers:
                channel = await self.layer.new_channel()
                await self.layer.group_add(group, channel)
                self._readers[group] = (channel, asyncio.ensure_future(self._read(group, channel)))
                if self._renewer is None or self._renewer.done():
                    self._renewer = asyncio.ensure_future(self._renew())
            self._inboxes.setdefault(group, set()).add(inbox)

    async def leave(self, group: str, inbox: Inbox) -> None:
        async with self._group_lock(group):
            inboxes = self._inboxes.get(group, set())
            inboxes.discard(inbox)
            if inboxes or group not in self._readers:
                return
            del self._inboxes[group]
            channel, reader = self._readers.pop(group)
            reader.cancel()
            if not self._readers and self._renewer is not None:
                self._renewer.cancel()
            try:
                await self.layer.group_discard(group, channel)
            except Exception:  # the layer is down: its group expiry removes the channel
                log.warning("could not leave %s", group, exc_info=True)

    def members(self, group: str) -> int:
        return len(self._inboxes.get(group, ()))

    @contextlib.asynccontextmanager
    async def _group_lock(self, group: str):
        """A join and a leave of one group never interleave; other groups do not wait."""
        lock, users = self._locks.get(group) or (asyncio.Lock(), 0)
        self._locks[group] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[group]
            if users == 1:
                del self._locks[group]
            else:
                self._locks[group] = (lock, users - 1)

    async def _read(self, group: str, channel: str) -> None:
        while True:
            try:
                event = await self.layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                _stop_if_cancelled()
                log.warning("could not read %s; retrying", group, exc_info=True)
                await asyncio.sleep(RETRY_SECONDS)
                with contextlib.suppress(Exception):  # a Redis that restarted empty forgot us
                    await self.layer.group_add(group, channel)
                continue
            for inbox in tuple(self._inboxes.get(group, ())):
                _put(inbox, event, group)

    async def _renew(self) -> None:
        while self._readers:
            await asyncio.sleep(RENEW_SECONDS)
            for group, (channel, _reader) in tuple(self._readers.items()):
                try:
                    await self.layer.group_add(group, channel)
                except Exception:
                    _stop_if_cancelled()
                    log.warning("could not renew %s", group, exc_info=True)


def _stop_if_cancelled() -> None:
    """Ends a task cancelled while the layer was reading: the layer may answer its
    cancellation with an error of its own (a connection torn down mid-read), and a task
    that retried then would never end, holding its event loop open as it closes."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


def _put(inbox: Inbox, event: dict[str, Any], group: str) -> None:
    if not inbox.full():
        inbox.put_nowait(event)
        return
    while not inbox.empty():  # what it has not read is replayed from the database
        inbox.get_nowait()
    inbox.put_nowait(BEHIND)
    log.warning("a socket of %s fell %d events behind; it reconnects", group, INBOX_CAPACITY)


_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, GroupFanout] = weakref.WeakKeyDictionary()


def fanout_for(layer: Any) -> GroupFanout:
    """The running event loop's fan-out (a loop's tasks and connections are its own)."""
    loop = asyncio.get_running_loop()
    fanout = _by_loop.get(loop)
    if fanout is None or fanout.layer is not layer:
        fanout = _by_loop[loop] = GroupFanout(layer)
    return fanout


def new_inbox() -> Inbox:
    return asyncio.Queue(maxsize=INBOX_CAPACITY)
