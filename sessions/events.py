"""Session events: an append-only log per session, broadcast after commit.

The session's websocket is a view of this table: it replays rows after a client's
last seq, then forwards live ones. The room's group gets a short summary so room
pages can update badges and the session list.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from rooms.broadcast import group_send
from sessions.models import Session, SessionEvent

SESSION_EVENT = "session.event"  # consumer method session_event
ROOM_SESSION_CHANGED = "room.session_changed"  # consumer method room_session_changed
SESSION_MEMBER_REMOVED = "session.member_removed"  # consumer method session_member_removed
SESSION_WAITING_FOR_MODEL = "session.waiting_for_model"  # consumer method session_waiting_for_model
# Session events the room's pages follow too: the task list and the badges change.
ROOM_KINDS = frozenset({"session.state_changed", "loop.suspected"})


def session_group(session_id: int) -> str:
    return f"session.{session_id}"


def event_frame(event: SessionEvent) -> dict[str, Any]:
    return {"type": "event", "seq": event.seq, "kind": event.kind, "payload": event.payload,
            "at": event.created_at.isoformat()}


def session_event_append(session: Session, kind: str, payload: dict[str, Any]) -> SessionEvent:
    """Append one event (caller holds a transaction); broadcast once it commits."""
    return session_events_append(session, [(kind, payload)])[0]


def session_events_append(session: Session, events: list[tuple[str, dict[str, Any]]], *,
                          fields: Sequence[str] = ()) -> list[SessionEvent]:
    """Append ``events`` (kind, payload) in order, with consecutive seqs, and save the
    session's ``fields`` with them: two statements however many there are (a unit
    commits several at once). The caller holds a transaction; each is broadcast once it
    commits, in order."""
    if not events:
        if fields:
            session.save(update_fields=list(fields))
        return []
    last = _seq_advanced(session, len(events), fields)
    rows = SessionEvent.objects.bulk_create([
        SessionEvent(session=session, seq=seq, kind=kind, payload=payload)
        for seq, (kind, payload) in enumerate(events, start=last - len(events) + 1)])
    for row in rows:
        frame = event_frame(row)
        transaction.on_commit(lambda f=frame: _send(session_group(session.pk), {"type": SESSION_EVENT, "frame": f}),
                              robust=True)
        if row.kind in ROOM_KINDS:
            summary = {"type": ROOM_SESSION_CHANGED, "session": session.pk,
                       "state": row.payload.get("state", session.state)}
            transaction.on_commit(lambda s=summary, g=f"room.{session.task.room_id}": _send(g, s), robust=True)
    return rows


def _seq_advanced(session: Session, count: int, fields: Sequence[str]) -> int:
    """The session's last event seq moved on by ``count`` and its ``fields`` saved, in one
    UPDATE … RETURNING (Django's update cannot return the new value: it took an
    UPDATE and a SELECT; so does SQLite before 3.35, which has no RETURNING); the new
    last seq."""
    quote = connection.ops.quote_name
    columns, params = [], []
    for name in dict.fromkeys(fields):
        field = Session._meta.get_field(name)
        columns.append(f"{quote(field.column)} = %s")
        params.append(field.get_db_prep_save(field.pre_save(session, add=False), connection))
    seq, table, pk = quote("last_event_seq"), quote(Session._meta.db_table), quote(Session._meta.pk.column)
    columns.append(f"{seq} = {seq} + %s")
    update = f"UPDATE {table} SET {', '.join(columns)} WHERE {pk} = %s"
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite" and sqlite3.sqlite_version_info < (3, 35):
            cursor.execute(update, [*params, count, session.pk])
            cursor.execute(f"SELECT {seq} FROM {table} WHERE {pk} = %s", [session.pk])
        else:
            cursor.execute(f"{update} RETURNING {seq}", [*params, count, session.pk])
        row = cursor.fetchone()
    if row is None:
        raise Session.DoesNotExist(f"session {session.pk} is gone")
    session.last_event_seq = row[0]
    return row[0]


def model_waiting_broadcast(session_id: int, since: datetime) -> None:
    """A request of the session is with its model from ``since``: the page says so and
    counts, until the next event arrives. Not a row of the log: a live note."""
    _send(session_group(session_id), {"type": SESSION_WAITING_FOR_MODEL, "since": since.isoformat()})


def member_removed_on_commit(room_id: int, user_id: int) -> None:
    """A person left the room: their open session sockets in it close once this commits."""
    session_ids = list(Session.objects.filter(task__room_id=room_id).values_list("pk", flat=True))
    event = {"type": SESSION_MEMBER_REMOVED, "user_id": user_id}

    def send() -> None:
        for session_id in session_ids:
            _send(session_group(session_id), event)

    transaction.on_commit(send, robust=True)


def _send(group: str, event: dict[str, Any]) -> None:
    group_send(group, event)  # queued: a failure is logged there, and clients catch up on reconnect
