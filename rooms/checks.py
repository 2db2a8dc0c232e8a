"""``check_*``: validate one thing and return it cleaned, or raise RoomError.

No database access here, so every rule is testable without one.
"""

from __future__ import annotations

from django.conf import settings

from rooms.errors import RoomError, RoomPermissionError
from rooms.models import Membership

RESERVED_SLUGS = frozenset({"new"})  # /rooms/new/ is the create page
CHECK_COMMAND_MAX_LENGTH = 500  # Room.check_command's column


def check_storable_text(text: str, *, what: str) -> str:
    """Refuse text no database column can hold: NUL characters (PostgreSQL rejects them
    in text and jsonb) and lone surrogates (not encodable as UTF-8 at all; JSON's
    ``"\\ud800"`` escape makes one)."""
    if "\x00" in text:
        raise RoomError(f"{what} contains a NUL character.", code="invalid")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise RoomError(f"{what} contains an invalid character (a lone UTF-16 surrogate).", code="invalid") from None
    return text


def check_message_text(text: object) -> str:
    """A person's message: a non-blank string of at most ATRIUM_MAX_MESSAGE_BYTES (UTF-8)."""
    if text is None:
        raise RoomError("The message is empty.", code="empty")
    if not isinstance(text, str):
        raise RoomError("The message text must be a string.", code="bad_request")
    text = check_storable_text(text, what="The message").strip()
    if not text:
        raise RoomError("The message is empty.", code="empty")
    limit = settings.ATRIUM_MAX_MESSAGE_BYTES
    size = len(text.encode("utf-8"))
    if size > limit:
        raise RoomError(
            f"The message is {size} bytes; the limit is {limit} bytes.", code="too_large"
        )
    return text


def check_client_key(key: object) -> str:
    """A browser's id for one frame: 1–64 letters, digits, `-` or `_`."""
    if not isinstance(key, str) or not 0 < len(key) <= 64 or not all(c.isascii() and (c.isalnum() or c in "-_")
                                                                     for c in key):
        raise RoomError("A frame id is 1 to 64 letters, digits, - or _.", code="bad_request")
    return key


def check_room_name(name: str) -> str:
    name = check_storable_text((name or "").strip(), what="The room name")
    if not name:
        raise RoomError("A room needs a name.", code="invalid")
    if len(name) > 120:
        raise RoomError("A room name has at most 120 characters.", code="invalid")
    return name


def check_check_command(command: str) -> str:
    command = check_storable_text((command or "").strip(), what="The check command")
    if len(command) > CHECK_COMMAND_MAX_LENGTH:
        raise RoomError(
            f"A check command has at most {CHECK_COMMAND_MAX_LENGTH} characters.", code="invalid"
        )
    return command


MAY_ACT_REFUSAL = "Only owners and members of this room can do that; viewers only look."


def may_act(membership: Membership | None) -> bool:
    """Who may act on a room and its tasks and sessions (post, steer, start, approve,
    cancel, assign agents): its owners and members. Viewers only look; someone without a
    membership, however active in rooms of their own, not even that. The one definition:
    views, consumers (through the services) and services all ask it."""
    return membership is not None and membership.can_post  # the roles: Membership.can_post


def check_may_act(membership: Membership | None, refusal: str = MAY_ACT_REFUSAL) -> None:
    if not may_act(membership):
        raise RoomPermissionError(refusal)


def check_can_post(membership: Membership) -> None:
    check_may_act(membership, "Viewers can read this room but not post in it.")


def check_can_manage_members(membership: Membership) -> None:
    if not membership.can_manage_members:
        raise RoomPermissionError("Only the room's owners can add or remove people.")


def check_can_assign_agents(membership: Membership) -> None:
    check_may_act(membership, "Viewers cannot assign or unassign agents.")


def check_is_staff(user) -> None:
    """Staff act from the admin on any room without being a member of it."""
    if not (getattr(user, "is_active", False) and getattr(user, "is_staff", False)):
        raise RoomPermissionError("Only staff can do that from the admin.")


def check_can_configure(membership: Membership) -> None:
    """What runs in a room (its check, its approval rules, its network) is its owners' call."""
    if membership.role != Membership.Role.OWNER:
        raise RoomPermissionError("Only the room's owners can change its check command, network access and "
                                  "approval rules.")
