"""rooms' answers to agents.signals: agents sits below rooms and never imports it, so
what a profile's change means for the rooms using it is connected here, from
``RoomsConfig.ready``."""

from __future__ import annotations

from agents import signals
from rooms import services


def _profile_changed(sender, *, profile, actor, changes, **kwargs) -> None:
    services.agent_changed_tell_rooms(agent=profile, actor=actor, changes=changes)


def connect() -> None:
    """Connect once (``dispatch_uid``), however often ``ready`` runs."""
    signals.profile_changed.connect(_profile_changed, dispatch_uid="rooms.receivers._profile_changed")
