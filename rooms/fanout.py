"""One channel-layer membership per process and group; the process fans out in memory.

With a membership per socket, every broadcast to a room watched by N sockets in one
Daphne is N messages in Redis, each popped by the process's one receive loop with its
own round trip: at 200 sockets and 50 posts a second that loop falls seconds behind.
Here the first socket of a group in a process joins the group with one channel of the
process's own; every event read from it is put in the inbox of each of the process's
sockets in that group, and the last socket to leave takes the membership away.

An inbox holds at most ``INBOX_CAPACITY`` events, as a socket's channel did (the Redis
layer's capacity): a socket that cannot keep up loses events rather than the process's
memory, and the stream fills gaps in room rows from the database (rooms.streams).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Any

log = logging.getLogger(__name__)

INBOX_CAPACITY = 100
RETRY_SECONDS = 1.0  # after a failed read (Redis away), before reading again

Inbox = asyncio.Queue


class GroupFanout:
    """The memberships of one event loop's sockets; use ``fanout_for(layer)``."""

    def __init__(self, layer: Any) -> None:
        self.layer = layer
        self._inboxes: dict[str, set[Inbox]] = {}
        self._readers: dict[str, tuple[str, asyncio.Task]] = {}
        self._lock = asyncio.Lock()  # a join and a leave of one group never interleave

    async def join(self, group: str, inbox: Inbox) -> None:
        """From now on, ``inbox`` gets every event sent to ``group``."""
        async with self._lock:
            # group_add also renews the membership, which the layer expires after its
            # group_expiry: a group one socket watches for days is renewed at each join.
            channel = self._readers[group][0] if group in self._readers else await self.layer.new_channel()
            await self.layer.group_add(group, channel)
            self._inboxes.setdefault(group, set()).add(inbox)
            if group not in self._readers:
                self._readers[group] = (channel, asyncio.ensure_future(self._read(group, channel)))

    async def leave(self, group: str, inbox: Inbox) -> None:
        async with self._lock:
            inboxes = self._inboxes.get(group, set())
            inboxes.discard(inbox)
            if inboxes or group not in self._readers:
                return
            del self._inboxes[group]
            channel, reader = self._readers.pop(group)
            reader.cancel()
            try:
                await self.layer.group_discard(group, channel)
            except Exception:  # the layer is down: its group expiry removes the channel
                log.warning("could not leave %s", group, exc_info=True)

    def members(self, group: str) -> int:
        return len(self._inboxes.get(group, ()))

    async def _read(self, group: str, channel: str) -> None:
        while True:
            try:
                event = await self.layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("could not read %s; retrying", group, exc_info=True)
                await asyncio.sleep(RETRY_SECONDS)
                continue
            for inbox in tuple(self._inboxes.get(group, ())):
                try:
                    inbox.put_nowait(event)
                except asyncio.QueueFull:
                    log.warning("a socket of %s is %d events behind; dropped one", group, INBOX_CAPACITY)


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
