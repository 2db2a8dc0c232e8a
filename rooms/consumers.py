"""The room websocket: ``/ws/rooms/<slug>/``.

Protocol (JSON text frames):
  client → ``{"type": "hello", "last_seq": N}`` first; then ``{"type": "chat", "text": ...}``
           or ``{"type": "steer", "agent": <agent profile id>, "text": ...}``, each with an
           optional ``"id"`` (1–64 of ``[A-Za-z0-9_-]``): a frame sent again with the same
           id (after a reconnect, not knowing whether the first copy arrived) is stored once.
  server → ``{"type": "message", "seq", "kind", "html", ...}`` for every message with
           seq > N, in seq order (at most a page: further behind, ``{"type": "truncated",
           "after_seq", "resume_seq"}`` first), then live; ``{"type": "synced", "last_seq"}``
           once the replay is done; ``{"type": "message.updated", ...}`` when a steer is
           delivered; ``{"type": "session.changed", "session", "state"}`` when one of
           the room's sessions changes state (the page refreshes its work region);
           ``{"type": "ack", "id", "seq"}`` once a frame with an id is stored;
           ``{"type": "error", "code", "message", "id"}`` for refused input (the
           connection stays open). Close code 4403: not (or no longer) a member;
           4409: the socket fell too far behind (reconnect and replay from the last seq).

The socket is a view of the database: every message is persisted by a service and
reaches sockets through the channel layer after commit; replays read the database.
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.http import Http404

from rooms import events, selectors
from rooms.checks import check_client_key
from rooms.errors import RoomError
from rooms.models import Message, Room
from rooms.services import message_post
from rooms.streams import (
    CLOSE_FORBIDDEN,
    SeqStreamConsumer,
    answer_bad_frame,
    check_id,
    parse_frame,
)

__all__ = ["CLOSE_FORBIDDEN", "RoomConsumer"]


class RoomConsumer(SeqStreamConsumer):
    room_id: int | None = None

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

    def stream_group(self) -> str:
        return events.room_group(self.room_id)

    async def still_allowed(self) -> bool:
        return await database_sync_to_async(_is_member)(self.user, self.room_id)

    async def frames_after(self, after_seq: int, up_to_seq: int | None, limit: int) -> list[dict[str, Any]]:
        return await database_sync_to_async(_frames_after)(self.room_id, after_seq, up_to_seq, limit)

    async def latest_seq(self) -> int | None:
        return await database_sync_to_async(_latest_seq)(self.room_id)

    # --- client frames -------------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.room_id is None:
            return  # closing: the connect check failed
        frame: dict[str, Any] = {}
        try:
            frame = _parse(text_data)
            handler = {"hello": self._hello, "chat": self._chat, "steer": self._steer}.get(frame["type"])
            if handler is None:
                raise RoomError(f"Unknown frame type {frame['type'][:40]!r}.", code="unknown_type")
            await handler(frame)
        except Http404:
            await self.close(code=CLOSE_FORBIDDEN)
        except Exception as exc:  # a bad frame never takes the connection down
            # The page matches an error to the message it queued by the frame's id.
            frame_id = frame.get("id")
            await answer_bad_frame(self, exc, frame_id=frame_id[:64] if isinstance(frame_id, str) else None)

    async def _hello(self, frame: dict[str, Any]) -> None:
        await self.stream_start(frame.get("last_seq", 0))

    async def _chat(self, frame: dict[str, Any]) -> None:
        await self._post(frame, kind=Message.Kind.CHAT, agent_id=None)

    async def _steer(self, frame: dict[str, Any]) -> None:
        agent_id = check_id(frame.get("agent"), what="A steer's agent (its id)")
        await self._post(frame, kind=Message.Kind.STEER, agent_id=agent_id)

    async def _post(self, frame: dict[str, Any], *, kind: str, agent_id: int | None) -> None:
        client_key = frame.get("id")
        if client_key is not None:
            client_key = check_client_key(client_key)
        seq = await database_sync_to_async(_post_message)(
            user=self.user, room_id=self.room_id, kind=kind, text=frame.get("text"), agent_id=agent_id,
            client_key=client_key or "",
        )
        if client_key:
            await self.send_json({"type": "ack", "id": client_key, "seq": seq})

    # --- group events ----------------------------------------------------------------------

    async def room_message(self, event: dict[str, Any]) -> None:
        await self.stream_forward(event["seq"], event["frame"])

    async def room_message_updated(self, event: dict[str, Any]) -> None:
        if self.last_sent_seq is not None and event["frame"]["seq"] <= self.last_sent_seq:
            await self.send_json(event["frame"])

    async def room_session_changed(self, event: dict[str, Any]) -> None:
        """Sent by sessions.events when a session of this room changes state."""
        if self.last_sent_seq is not None:
            await self.send_json({"type": "session.changed", "session": event["session"], "state": event["state"]})

    async def room_member_removed(self, event: dict[str, Any]) -> None:
        if event["user_id"] == self.user.pk:
            await self.close(code=CLOSE_FORBIDDEN)


def _parse(text_data: str | None) -> dict[str, Any]:
    # A frame can be at most a maximal text escaped as JSON plus a little envelope;
    # anything larger is refused before the parser spends time on it.
    return parse_frame(text_data, max_length=6 * settings.ATRIUM_MAX_MESSAGE_BYTES + 1024)


def _post_message(*, user, room_id: int, kind: str, text: Any, agent_id: int | None, client_key: str) -> int:
    # Re-check access on every post: the person may have been removed since connecting.
    access = selectors.access_room_by_id(user, room_id)
    # An unknown agent reaches the service as None, which refuses it after the
    # permission check (a viewer hears "you can't post" before "no such agent").
    room_agent = selectors.room_agent_for(access.room, agent_id) if agent_id is not None else None
    agent = room_agent.agent if room_agent is not None else None
    # The post wakes every session it reaches, in its transaction (rooms.signals.message_posted).
    message = message_post(room=access.room, author=user, kind=kind, text=text, agent=agent,
                           client_key=client_key)
    return message.seq


def _is_member(user, room_id: int) -> bool:
    try:
        selectors.access_room_by_id(user, room_id)
    except Http404:
        return False
    return True


def _latest_seq(room_id: int) -> int:
    return Room.objects.values_list("last_message_seq", flat=True).get(pk=room_id)


def _frames_after(room_id: int, after_seq: int, up_to_seq: int | None, limit: int) -> list[dict[str, Any]]:
    messages = selectors.messages_after(room_id, after_seq, up_to_seq=up_to_seq, limit=limit)
    return [events.message_frame(m) for m in messages]

