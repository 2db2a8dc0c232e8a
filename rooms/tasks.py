"""Celery tasks of rooms: adapters that load by id and call one service."""

from __future__ import annotations

from celery import shared_task

from rooms import upstream_link
from rooms.models import Room


@shared_task(ignore_result=True)
def fetch_upstream(room_id: int) -> str | None:
    """A person's "Fetch now": the upstream brought into main, what it came to said in
    the room (even "up to date"); None for a room gone or no longer linked."""
    room = Room.objects.filter(pk=room_id).first()
    return upstream_link.bring_in(room, tell_unchanged=True) if room is not None else None
