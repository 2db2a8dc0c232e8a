"""agents' answers to rooms.signals: rooms sits below agents and never imports it, so
what a room's events mean for agents and sessions is connected here, from
``AgentsConfig.ready``. Each receiver adapts a signal to one service or selector."""

from __future__ import annotations

from agents import events, selectors, services
from rooms import signals


def _message_posted(sender, *, message, **kwargs) -> None:
    services.sessions_wake_reached(message=message)


def _member_removed(sender, *, room_id: int, user_id: int, **kwargs) -> None:
    events.member_removed_on_commit(room_id, user_id)


def _room_list_annotations(sender, *, room_pk, **kwargs) -> dict:
    return selectors.room_list_counts(room_pk)


def _steer_target(sender, *, room, agent_id: int, **kwargs):
    room_agent = selectors.room_agent_for(room, agent_id)
    return room_agent.agent if room_agent is not None else None


RECEIVERS = (
    (signals.message_posted, _message_posted),
    (signals.member_removed, _member_removed),
    (signals.room_list_annotations, _room_list_annotations),
    (signals.steer_target, _steer_target),
)


def connect() -> None:
    """Connect every receiver once (``dispatch_uid``), however often ``ready`` runs."""
    for signal, receiver in RECEIVERS:
        signal.connect(receiver, dispatch_uid=f"agents.receivers.{receiver.__name__}")
