"""The room websocket: ``/ws/rooms/<slug>/``.

Protocol (JSON text frames):
  client → ``{"type": "hello", "last_seq": N}`` first; then ``{"type": "chat", "text": ...}``
           or ``{"type": "steer", "agent": <agent profile id>, "text": ...}``.
  server → ``{"type": "message", "seq", "kind", "html", ...}`` for every message with
           seq > N, in seq order, then live; ``{"type": "synced", "last_seq"}`` once the
           replay is done; ``{"type": "message.updated", ...}`` when a steer is
           delivered; ``{"type": "error", "code", "message"}`` for refused input (the
           connection stays open). Close code 4403: not (or no longer) a member.

The socket is a view of the database: every message is persisted by a service and
reaches sockets through the channel layer after commit; replays read the database.
"""

from __future__ import annotations

import json
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.http import Http404

from rooms import events, selectors, services
from rooms.errors import RoomError
from rooms.models import Message

CLOSE_FORBIDDEN = 4403
REPLAY_BATCH = 200  # messages read and sent per database round trip


class RoomConsumer(AsyncWebsocketConsumer):
    room_id: int | None = None
    # Highest seq sent to this client; live events at or below it are duplicates.
    last_sent_seq: int | None = None

    async def connect(self) -> None:
        await self.accept()
        try:
            access = await database_sync_to_async(selectors.access_room)(
                self.scope["user"], self.scope["url_route"]["kwargs"]["slug"]
            )
        except Http404:
            # Accept first, then close: browsers only see a close code on an open socket.
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.room_id = access.room.pk
        self.user = self.scope["user"]

    async def disconnect(self, code: int) -> None:
        if self.room_id is not None and self.last_sent_seq is not None:
            await self.channel_layer.group_discard(events.room_group(self.room_id), self.channel_name)

    # --- client frames -------------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.room_id is None:
            return  # closing: the connect check failed
        try:
            frame = _parse(text_data)
            handler = {"hello": self._hello, "chat": self._chat, "steer": self._steer}.get(frame["type"])
            if handler is None:
                raise RoomError(f"Unknown frame type {frame['type']!r}.", code="unknown_type")
            await handler(frame)
        except RoomError as exc:
            await self._send_json({"type": "error", "code": exc.code, "message": exc.message})
        except Http404:
            await self.close(code=CLOSE_FORBIDDEN)

    async def _hello(self, frame: dict[str, Any]) -> None:
        if self.last_sent_seq is not None:
            raise RoomError("hello was already sent on this connection.", code="bad_request")
        last_seq = frame.get("last_seq", 0)
        if isinstance(last_seq, bool) or not isinstance(last_seq, int) or last_seq < 0:
            raise RoomError("last_seq must be a non-negative integer.", code="bad_request")
        # Join before reading: a message committed in between is then both replayed and
        # received live, and the seq check below drops the second copy. The channel
        # layer queues live events until this handler returns.
        await self.channel_layer.group_add(events.room_group(self.room_id), self.channel_name)
        self.last_sent_seq = last_seq
        await self._send_from_database(after_seq=last_seq)
        await self._send_json({"type": "synced", "last_seq": self.last_sent_seq})

    async def _chat(self, frame: dict[str, Any]) -> None:
        await self._post(kind=Message.Kind.CHAT, text=frame.get("text"), agent_id=None)

    async def _steer(self, frame: dict[str, Any]) -> None:
        agent_id = frame.get("agent")
        if isinstance(agent_id, bool) or not isinstance(agent_id, int):
            raise RoomError("A steer names its agent by id.", code="bad_request")
        await self._post(kind=Message.Kind.STEER, text=frame.get("text"), agent_id=agent_id)

    async def _post(self, *, kind: str, text: Any, agent_id: int | None) -> None:
        await database_sync_to_async(_post_message)(
            user=self.user, room_id=self.room_id, kind=kind, text=text, agent_id=agent_id
        )

    # --- group events ----------------------------------------------------------------------

    async def room_message(self, event: dict[str, Any]) -> None:
        if self.last_sent_seq is None:
            return
        seq = event["seq"]
        if seq <= self.last_sent_seq:
            return  # already sent by the replay
        if seq > self.last_sent_seq + 1:
            # Broadcasts from different processes can arrive out of order; committed
            # seqs are dense, so the ones in between are in the database already.
            await self._send_from_database(after_seq=self.last_sent_seq, up_to_seq=seq - 1)
        await self._send_json(event["frame"])
        self.last_sent_seq = seq

    async def room_message_updated(self, event: dict[str, Any]) -> None:
        if self.last_sent_seq is not None and event["frame"]["seq"] <= self.last_sent_seq:
            await self._send_json(event["frame"])

    async def room_member_removed(self, event: dict[str, Any]) -> None:
        if event["user_id"] == self.user.pk:
            await self.close(code=CLOSE_FORBIDDEN)

    # --- helpers ------------------------------------------------------------------------------

    async def _send_from_database(self, *, after_seq: int, up_to_seq: int | None = None) -> None:
        while True:
            frames = await database_sync_to_async(_frames_after)(self.room_id, after_seq, up_to_seq)
            for frame in frames:
                await self._send_json(frame)
                self.last_sent_seq = max(self.last_sent_seq or 0, frame["seq"])
            if len(frames) < REPLAY_BATCH:
                return
            after_seq = frames[-1]["seq"]

    async def _send_json(self, frame: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(frame))


def _parse(text_data: str | None) -> dict[str, Any]:
    if text_data is None:
        raise RoomError("Frames are JSON text, not binary.", code="bad_json")
    # A frame can be at most a maximal text escaped as JSON plus a little envelope;
    # anything larger is refused before the parser spends time on it.
    if len(text_data) > 6 * settings.ATRIUM_MAX_MESSAGE_BYTES + 1024:
        raise RoomError("The frame is too large.", code="too_large")
    try:
        frame = json.loads(text_data)
    except ValueError:
        raise RoomError("The frame is not valid JSON.", code="bad_json") from None
    if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
        raise RoomError('A frame is a JSON object with a "type".', code="bad_request")
    return frame


def _post_message(*, user, room_id: int, kind: str, text: Any, agent_id: int | None) -> None:
    # Re-check access on every post: the person may have been removed since connecting.
    access = selectors.access_room_by_id(user, room_id)
    room_agent = selectors.room_agent_for(access.room, agent_id) if agent_id is not None else None
    # An unknown agent reaches the service as None, which refuses it after the
    # permission check (a viewer hears "you can't post" before "no such agent").
    agent = room_agent.agent if room_agent else None
    services.message_post(room=access.room, author=user, kind=kind, text=text, agent=agent)


def _frames_after(room_id: int, after_seq: int, up_to_seq: int | None) -> list[dict[str, Any]]:
    messages = selectors.messages_after(room_id, after_seq, up_to_seq=up_to_seq, limit=REPLAY_BATCH)
    return [events.message_frame(m) for m in messages]

