"""sessions' answers to rooms.signals: rooms sits below sessions and never imports it, so
what a room's events mean for sessions is connected here, from ``SessionsConfig.ready``.
Each receiver adapts a signal to one service."""

from __future__ import annotations

from rooms import signals
from sessions import events
from sessions.services import talk


def _message_posted(sender, *, message, **kwargs) -> None:
    talk.sessions_wake_reached(message=message)


def _member_removed(sender, *, room_id: int, user_id: int, **kwargs) -> None:
    events.member_removed_on_commit(room_id, user_id)


RECEIVERS = (
    (signals.message_posted, _message_posted),
    (signals.member_removed, _member_removed),
)


def connect() -> None:
    """Connect every receiver once (``dispatch_uid``), however often ``ready`` runs."""
    for signal, receiver in RECEIVERS:
        signal.connect(receiver, dispatch_uid=f"sessions.receivers.{receiver.__name__}")
