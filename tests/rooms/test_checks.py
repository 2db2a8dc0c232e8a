from __future__ import annotations

import pytest
from django.test import override_settings

from rooms.checks import (
    check_check_command,
    check_message_text,
    check_room_name,
    check_storable_text,
)
from rooms.errors import RoomError


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("before\x00after", "NUL character"),
        ("\x00", "NUL character"),
        ("half a pair \ud83d here", "surrogate"),
        ("\udc80 the low half alone", "surrogate"),
    ],
    ids=["nul-inside", "only-nul", "high-surrogate", "low-surrogate"],
)
def test_messages_no_database_can_store_are_refused_as_invalid(text, error):
    with pytest.raises(RoomError, match=error) as refused:
        check_message_text(text)
    assert refused.value.code == "invalid"


def test_everything_else_a_person_types_is_kept():
    text = "tabs\tand\nnewlines, émoji 🎉, a pair \ud83d\ude00 joined, \x01 controls"
    # A literal keeps the two halves of a pair apart; JSON's parser joins them, as this does.
    joined = text.encode("utf-16", "surrogatepass").decode("utf-16")
    assert check_message_text(f"  {joined}  ") == joined


@override_settings(ATRIUM_MAX_MESSAGE_BYTES=10)
def test_the_size_limit_counts_utf8_bytes():
    assert check_message_text("€€€") == "€€€"  # 9 bytes
    with pytest.raises(RoomError) as refused:
        check_message_text("€€€€")
    assert refused.value.code == "too_large"


def test_room_names_and_check_commands_are_stripped_and_checked():
    assert check_room_name("  Payments  ") == "Payments"
    assert check_check_command("  pytest -q ") == "pytest -q"
    assert check_check_command("") == ""
    for check, bad in ((check_room_name, "a\x00b"), (check_room_name, "x" * 121),
                       (check_check_command, "\ud800"), (check_check_command, "y" * 501)):
        with pytest.raises(RoomError) as refused:
            check(bad)
        assert refused.value.code == "invalid"


def test_storable_text_names_what_was_refused():
    with pytest.raises(RoomError, match="^The title contains a NUL character"):
        check_storable_text("a\x00", what="The title")
