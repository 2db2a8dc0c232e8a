"""What leaves the process about a room: websocket frames and channel-layer group events.

Services persist first and call ``broadcast_on_commit``; consumers turn group events
into frames. A frame carries the rendered HTML fragment, so every client shows a
message the same way the page does.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.template.loader import render_to_string

from rooms.broadcast import group_send
from rooms.models import Message

# Group event types (channels maps "room.message" to the consumer method room_message).
MESSAGE_POSTED = "room.message"
MESSAGE_UPDATED = "room.message_updated"
MEMBER_REMOVED = "room.member_removed"


def room_group(room_id: int) -> str:
    return f"room.{room_id}"


def message_frame(message: Message, *, frame_type: str = "message") -> dict[str, Any]:
    """The JSON frame for one message; ``message`` should carry its author and agent."""
    return {
        "type": frame_type,
        "id": message.pk,
        "seq": message.seq,
        "kind": message.kind,
        "author": message.author.get_username() if message.author else None,
        "agent": message.agent_id,
        "text": message.text,
        "created_at": message.created_at.isoformat(),
        "delivered_at": message.delivered_at.isoformat() if message.delivered_at else None,
        "html": render_to_string("rooms/_message.html", {"message": message}),
    }


def broadcast_on_commit(room_id: int, event: dict[str, Any]) -> None:
    """Send ``event`` to the room's group once the current transaction has committed.

    A failed send is logged, not raised: the data is already committed, and clients
    catch up from the database when they reconnect with their last seq.
    """
    transaction.on_commit(lambda: _send(room_id, event), robust=True)


def _send(room_id: int, event: dict[str, Any]) -> None:
    group_send(room_group(room_id), event)
