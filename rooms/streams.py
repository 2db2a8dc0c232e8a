"""A websocket that is a view of an append-only table numbered densely by ``seq``.

Room chat and session events share this protocol: the client says
``{"type": "hello", "last_seq": N}``; the server joins the live group, replays every
row with seq > N from the database, sends ``{"type": "synced", "last_seq"}``, then
forwards live rows. Each row reaches the client once and in seq order: live copies
at or below what was sent are dropped, and a live row that arrives ahead of the
client is preceded by the rows in between, read from the database.

A hello replays at most ``REPLAY_PAGE`` rows: a client further behind first gets
``{"type": "truncated", "after_seq", "resume_seq"}`` and then the newest page (the page
it shows is then a reload away from complete). The replay runs beside the socket's
other handlers, so a disconnect cancels it; live rows wait for it (one send lock).
Whatever way the consumer ends (a close, a disconnect, a crash, a cancel), it leaves
its group, so no dead channel stays a member.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from abc import ABC, abstractmethod
from typing import Any

from channels.consumer import get_handler_name
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer
from channels.utils import await_many_dispatch

from rooms import fanout
from rooms.errors import RoomError

CLOSE_FORBIDDEN = 4403
CLOSE_BEHIND = 4409  # fell too far behind the live stream: reconnect and replay
REPLAY_BATCH = 200  # rows read and sent per database round trip
REPLAY_PAGE = 1000  # the most rows a hello replays
MAX_ID = 2**63 - 1  # the largest id or seq the database holds
MAX_NESTING = 8  # no client frame needs more than two levels
_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')  # a string (skipped whole) or a bracket

log = logging.getLogger(__name__)


class SeqStreamConsumer(AsyncWebsocketConsumer, ABC):
    # Highest seq sent to this client; None until hello has joined the live group.
    last_sent_seq: int | None = None
    _joined: str | None = None  # the group joined at hello
    _replay: asyncio.Task | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sending = asyncio.Lock()  # one sender of seq rows at a time: replay or live
        self._inbox = fanout.new_inbox()  # the group's events, put there by rooms.fanout

    @abstractmethod
    def stream_group(self) -> str:
        """The channel-layer group whose events carry this stream's rows."""

    @abstractmethod
    async def frames_after(self, after_seq: int, up_to_seq: int | None, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` frames with ``after_seq < seq [<= up_to_seq]``, oldest first."""

    @abstractmethod
    async def still_allowed(self) -> bool:
        """Whether the person may still see this stream (checked again at hello)."""

    async def latest_seq(self) -> int | None:
        """The stream's newest seq, if cheaply known; None replays without a cap."""
        return None

    async def __call__(self, scope, receive, send) -> None:
        """As Channels' consumer runs, but group events come from the inbox rather than a
        channel of the socket's own in the layer (one per socket is what rooms.fanout saves)."""
        self.scope, self.base_send = scope, send
        self.channel_layer = get_channel_layer(self.channel_layer_alias)
        try:
            await await_many_dispatch([receive, self._inbox.get], self.dispatch)
        except StopConsumer:
            pass
        finally:
            # A crash or a cancel skips websocket_disconnect: leave the group here too.
            await asyncio.shield(self._leave())

    async def dispatch(self, message: dict[str, Any]) -> None:
        """As Channels dispatches, without its thread hop per message to close old
        database connections: every database call here goes through
        database_sync_to_async, which does that itself, in its own hop."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def stream_behind(self, event: dict[str, Any]) -> None:
        """rooms.fanout dropped what this socket had not read yet: the client's reconnect
        replays it from the database (and checks access again)."""
        await self.close(code=CLOSE_BEHIND)

    async def disconnect(self, code: int) -> None:
        await self._leave()

    async def _leave(self) -> None:
        if self._replay is not None:
            self._replay.cancel()
        if self._joined is not None:
            group, self._joined = self._joined, None
            await fanout.fanout_for(self.channel_layer).leave(group, self._inbox)

    async def stream_start(self, last_seq: Any) -> None:
        """Handle hello: validate ``last_seq``, join the group, start the replay (which
        ends with "synced")."""
        if self.last_sent_seq is not None:
            raise RoomError("hello was already sent on this connection.", code="bad_request")
        if isinstance(last_seq, bool) or not isinstance(last_seq, int) or not 0 <= last_seq <= MAX_ID:
            raise RoomError(f"last_seq must be an integer from 0 to {MAX_ID}.", code="bad_request")
        # Access was checked at connect; a person removed since must not replay the log.
        if not await self.still_allowed():
            await self.close(code=CLOSE_FORBIDDEN)
            return
        # Join before reading: a row committed in between is then both replayed and
        # received live, and stream_forward drops the second copy. Live rows wait for
        # the replay: it holds the send lock from here on.
        await self._sending.acquire()
        try:
            group = self.stream_group()
            await fanout.fanout_for(self.channel_layer).join(group, self._inbox)
            self._joined = group
            self.last_sent_seq = last_seq
            latest = await self.latest_seq()
        except BaseException:
            self._sending.release()
            raise
        self._replay = asyncio.ensure_future(self._replay_page(last_seq, latest))

    async def _replay_page(self, last_seq: int, latest: int | None) -> None:
        """Called holding the send lock (taken by stream_start); releases it."""
        try:
            start = last_seq
            if latest is not None and latest - last_seq > REPLAY_PAGE:
                start = latest - REPLAY_PAGE
                await self.send_json({"type": "truncated", "after_seq": last_seq, "resume_seq": start})
                self.last_sent_seq = start
            await self._send_from_database(after_seq=start, up_to_seq=latest)
            await self.send_json({"type": "synced", "last_seq": self.last_sent_seq})
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await answer_bad_frame(self, exc)
        finally:
            self._sending.release()

    async def stream_forward(self, seq: int, frame: dict[str, Any]) -> None:
        """Send one live row unless the client has it; fill any gap before it first.
        ``frame`` is shared by the process's sockets of the group (rooms.fanout): encoded
        once, for all of them."""
        async with self._sending:
            if self.last_sent_seq is None or seq <= self.last_sent_seq:
                return
            if seq > self.last_sent_seq + 1:
                # Broadcasts from different processes can arrive out of order; committed
                # seqs are dense, so the ones in between are in the database already.
                await self._send_from_database(after_seq=self.last_sent_seq, up_to_seq=seq - 1)
            await self.send(text_data=encoded(frame))
            self.last_sent_seq = seq

    async def stream_note(self, frame: dict[str, Any]) -> None:
        """Send a live frame that is no row of the log (it carries no seq), once the
        client is caught up; one that misses it learns the same from its next page."""
        async with self._sending:
            if self.last_sent_seq is not None:
                await self.send_json(frame)

    async def _send_from_database(self, *, after_seq: int, up_to_seq: int | None = None) -> None:
        while True:
            frames = await self.frames_after(after_seq, up_to_seq, REPLAY_BATCH)
            for frame in frames:
                await self.send_json(frame)
                self.last_sent_seq = max(self.last_sent_seq or 0, frame["seq"])
            if len(frames) < REPLAY_BATCH:
                return
            after_seq = frames[-1]["seq"]

    async def send_json(self, frame: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(frame))


_encoded: dict[int, tuple[dict[str, Any], str]] = {}  # id(frame) → (frame, its text), the last few


def encoded(frame: dict[str, Any]) -> str:
    """``frame`` as JSON text, encoded once however many sockets send it: 200 watchers of
    a room spent more time encoding a post than sending it."""
    held = _encoded.get(id(frame))
    if held is not None and held[0] is frame:
        return held[1]
    text = json.dumps(frame)
    if len(_encoded) >= 64:
        _encoded.pop(next(iter(_encoded)))
    _encoded[id(frame)] = (frame, text)
    return text


def parse_frame(text_data: str | None, *, max_length: int) -> dict[str, Any]:
    """A client frame: a JSON object with a string ``type``, at most ``max_length`` characters
    and ``MAX_NESTING`` levels deep (checked before parsing: a deep frame costs nothing)."""
    if text_data is None:
        raise RoomError("Frames are JSON text, not binary.", code="bad_json")
    if len(text_data) > max_length:
        raise RoomError(f"The frame is too large (at most {max_length} characters).", code="too_large")
    if _nesting(text_data) > MAX_NESTING:
        raise RoomError(f"The frame is nested more than {MAX_NESTING} levels deep.", code="too_deep")
    try:
        frame = json.loads(text_data)
    except (ValueError, RecursionError):  # ints past 4,300 digits are a ValueError too
        raise RoomError("The frame is not valid JSON.", code="bad_json") from None
    if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
        raise RoomError('A frame is a JSON object with a "type".', code="bad_request")
    return frame


def check_id(value: Any, *, what: str) -> int:
    """A row id from a client frame: an integer the database can hold (1 … 2^63−1)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ID:
        raise RoomError(f"{what} must be an integer from 1 to {MAX_ID}.", code="bad_request")
    return value


def _nesting(text: str) -> int:
    """How deep arrays and objects nest in ``text`` (strings skipped), without parsing it."""
    depth = deepest = 0
    for token in _STRUCTURE.finditer(text):
        mark = token.group()
        if mark in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif mark in "]}":
            depth -= 1
    return deepest


async def answer_bad_frame(consumer: AsyncWebsocketConsumer, exc: Exception, *, frame_id: str | None = None) -> None:
    """Every failure to handle a frame becomes an error frame (with the frame's ``id``, if
    it had one); the connection stays open."""
    if isinstance(exc, RoomError):
        error = {"type": "error", "code": exc.code, "message": exc.message}
    else:
        log.exception("a websocket frame could not be handled")
        error = {"type": "error", "code": "internal",
                 "message": "That frame could not be handled; nothing was changed. Try again, or reload the page."}
    if frame_id is not None:
        error["id"] = frame_id
    await consumer.send(text_data=json.dumps(error))
