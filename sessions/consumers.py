"""The session websocket: ``/ws/sessions/<id>/``, a live view of a session's event log.

Protocol (JSON text frames):
  client → ``{"type": "hello", "last_seq": N}``, once.
  server → ``{"type": "event", "seq", "kind", "payload", "at", "html", "refresh"}`` for
           every SessionEvent with seq > N, in seq order, then live; ``html`` is the
           log line the page shows and ``refresh`` says the session's status (header,
           token gauge, approvals) changed. The replay is at most a page: further behind,
           ``{"type": "truncated", "after_seq", "resume_seq"}`` comes first.
           ``{"type": "synced", "last_seq"}`` once the replay is done; ``{"type": "error", "code", "message"}`` for a bad frame (the
           connection stays open). Close code 4403: not a member of the session's room.

Read-only: steering, approvals, cancel and retry are POSTs to the session page, which
call the services. Closing the socket stops nothing.
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from django.http import Http404

from rooms.errors import RoomError
from rooms.streams import CLOSE_FORBIDDEN, SeqStreamConsumer, answer_bad_frame, parse_frame
from sessions.event_lines import log_frame, with_html
from sessions.events import session_group
from sessions.models import Session
from sessions.selectors import access_session, session_events_after

MAX_FRAME_LENGTH = 1024  # the only client frame is a short hello


class SessionConsumer(SeqStreamConsumer):
    session_id: int | None = None

    async def connect(self) -> None:
        await self.accept()
        try:
            access = await database_sync_to_async(access_session)(
                self.scope["user"], self.scope["url_route"]["kwargs"]["session_id"]
            )
        except Http404:
            # Accept first, then close: browsers only see a close code on an open socket.
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.session_id = access.session.pk

    def stream_group(self) -> str:
        return session_group(self.session_id)

    async def still_allowed(self) -> bool:
        return await database_sync_to_async(_can_see)(self.scope["user"], self.session_id)

    async def frames_after(self, after_seq: int, up_to_seq: int | None, limit: int) -> list[dict[str, Any]]:
        return await database_sync_to_async(_frames_after)(self.session_id, after_seq, up_to_seq, limit)

    async def latest_seq(self) -> int | None:
        return await database_sync_to_async(_latest_seq)(self.session_id)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.session_id is None:
            return  # closing: the connect check failed
        try:
            frame = parse_frame(text_data, max_length=MAX_FRAME_LENGTH)
            if frame["type"] != "hello":
                raise RoomError(
                    f"Unknown frame type {frame['type'][:40]!r}: this socket only streams events; "
                    "steer, approve and cancel from the session page.", code="unknown_type",
                )
            await self.stream_start(frame.get("last_seq", 0))
        except Exception as exc:  # a bad frame never takes the connection down
            await answer_bad_frame(self, exc)

    async def session_member_removed(self, event: dict[str, Any]) -> None:
        """Sent by sessions.events when someone leaves the session's room."""
        if event["user_id"] == self.scope["user"].pk:
            await self.close(code=CLOSE_FORBIDDEN)

    async def session_waiting_for_model(self, event: dict[str, Any]) -> None:
        """Sent by sessions.events when the session's worker sends its model a request."""
        await self.stream_note({"type": "waiting", "since": event["since"]})

    async def session_event(self, event: dict[str, Any]) -> None:
        """A committed SessionEvent, broadcast by sessions.events. The event is shared by the
        process's sockets of the session (rooms.fanout): its line is rendered once."""
        if (frame := event.get("rendered")) is None:
            frame = event["rendered"] = with_html(event["frame"])
        await self.stream_forward(frame["seq"], frame)


def _can_see(user, session_id: int) -> bool:
    try:
        access_session(user, session_id)
    except Http404:
        return False
    return True


def _latest_seq(session_id: int) -> int:
    return Session.objects.values_list("last_event_seq", flat=True).get(pk=session_id)


def _frames_after(session_id: int, after_seq: int, up_to_seq: int | None, limit: int) -> list[dict[str, Any]]:
    return [log_frame(e) for e in session_events_after(session_id, after_seq, up_to_seq=up_to_seq, limit=limit)]
