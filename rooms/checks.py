"""``check_*``: validate one thing and return it cleaned, or raise RoomError.

No database access here, so every rule is testable without one.
"""

from __future__ import annotations

from django.conf import settings

from rooms.errors import RoomError, RoomPermissionError
from rooms.models import Membership

RESERVED_SLUGS = frozenset({"new"})  # /rooms/new/ is the create page


def check_message_text(text: object) -> str:
    """A person's message: a non-blank string of at most ATRIUM_MAX_MESSAGE_BYTES (UTF-8)."""
    if text is None:
        raise RoomError("The message is empty.", code="empty")
    if not isinstance(text, str):
        raise RoomError("The message text must be a string.", code="bad_request")
    text = text.strip()
    if not text:
        raise RoomError("The message is empty.", code="empty")
    limit = settings.ATRIUM_MAX_MESSAGE_BYTES
    size = len(text.encode("utf-8"))
    if size > limit:
        raise RoomError(
            f"The message is {size} bytes; the limit is {limit} bytes.", code="too_large"
        )
    return text


def check_room_name(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise RoomError("A room needs a name.", code="invalid")
    if len(name) > 120:
        raise RoomError("A room name has at most 120 characters.", code="invalid")
    return name


def check_can_post(membership: Membership) -> None:
    if not membership.can_post:
        raise RoomPermissionError("Viewers can read this room but not post in it.")


def check_can_manage_members(membership: Membership) -> None:
    if not membership.can_manage_members:
        raise RoomPermissionError("Only the room's owners can add or remove people.")


def check_can_assign_agents(membership: Membership) -> None:
    if not membership.can_post:
        raise RoomPermissionError("Viewers cannot assign or unassign agents.")
