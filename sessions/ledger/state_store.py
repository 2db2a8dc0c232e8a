"""A session's gateway state in the database: StateRecord rows written by a journal.

``gateway_state_save`` runs inside the unit's transaction (the worker's commit, holding
the session row lock): the record and the rest of the unit commit together or not at
all, so a worker killed mid-save leaves the records of the last committed unit.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Subquery

from agents.models import AgentProfile
from observations.columns import Columns, instances
from observations.gateway.journal import Record, StateJournal, apply_delta
from observations.inserts import rows_insert
from rooms.models import Room
from sessions.models import Session, StateRecord, Task


class StateRecordsBroken(RuntimeError):
    """The records cannot give the state back (one was deleted by hand): restoring from
    them would silently start the session over, or skip a unit."""


@dataclass(frozen=True)
class StoredState:
    state: dict[str, Any]  # what dump_state gave when the last record was written
    seq: int  # the last record (0: read from the old whole-state column)
    snapshot_bytes: int
    since_snapshot: int  # bytes of the deltas after the snapshot

    def journal_for(self, ctx) -> StateJournal:
        """A journal that goes on from ``ctx``, restored from this state. A state read
        from the old column starts with a snapshot, which supersedes the column."""
        journal = StateJournal()
        if self.seq:
            journal.prime(ctx, seq=self.seq, snapshot_bytes=self.snapshot_bytes, since_snapshot=self.since_snapshot)
        return journal


def gateway_state_read(session) -> StoredState | None:
    """The session's saved gateway state, or None before its first unit: the newest
    snapshot and the deltas after it, in one query."""
    newest = (StateRecord.objects.filter(session=session, snapshot=True).order_by("-seq").values("seq")[:1])
    rows = list(StateRecord.objects.filter(session=session, seq__gte=Subquery(newest)).order_by("seq")
                .values_list("seq", "data", "size"))
    if not rows:
        if StateRecord.objects.filter(session=session).exists():
            raise StateRecordsBroken(f"session {session.pk}: its state has deltas but no snapshot")
        legacy = type(session).objects.filter(pk=session.pk).values_list("gateway_state", flat=True).first()
        return StoredState(state=legacy, seq=0, snapshot_bytes=0, since_snapshot=0) if legacy else None
    newest_seq = rows[0][0]
    if [seq for seq, _, _ in rows] != list(range(newest_seq, newest_seq + len(rows))):
        raise StateRecordsBroken(f"session {session.pk}: a delta of its state is missing")
    state = json.loads(rows[0][1])
    for _, data, _ in rows[1:]:
        apply_delta(state, json.loads(data))
    return StoredState(state=state, seq=rows[-1][0], snapshot_bytes=rows[0][2], since_snapshot=sum(size for _, _, size in rows[1:]))


def gateway_session_read(pk: int):
    """The session with its task, room and agent, its gateway state left unread, and
    ``state_seq``: its newest state record (0: none), read with it rather than in a
    statement of its own. Read on every gateway request, so written out: the ORM's
    select_related of four models and the subquery took some 3 ms to build and compile,
    several times what the statement takes. A test holds it to the ORM's query."""
    with connection.cursor() as cursor:
        cursor.execute(_session_statement(), [pk])
        row = cursor.fetchone()
    if row is None:
        raise Session.DoesNotExist(f"No session {pk}.")
    session, task, room, agent = instances(row, _session_columns())
    task.room, session.task, session.agent = room, task, agent
    session.state_seq = row[-1]
    return session


@functools.cache
def _session_columns() -> tuple[Columns, ...]:
    return (Columns(Session, "s", deferred=("gateway_state",)), Columns(Task, "t"), Columns(Room, "r"),
            Columns(AgentProfile, "a"))


@functools.cache
def _session_statement() -> str:
    session, task, room, agent = _session_columns()
    record = Columns(StateRecord, "sr")
    return (f"SELECT {session.select()}, {task.select()}, {room.select()}, {agent.select()}, "
            f"COALESCE((SELECT MAX({record.column('seq')}) FROM {record.table} "
            f"WHERE {record.column('session')} = {session.column('id')}), 0) "
            f"FROM {session.table} JOIN {task.table} ON {task.column('id')} = {session.column('task')} "
            f"JOIN {room.table} ON {room.column('id')} = {task.column('room')} "
            f"JOIN {agent.table} ON {agent.column('id')} = {session.column('agent')} "
            f"WHERE {session.column('id')} = %s")


def gateway_state_save(*, session, record: Record) -> None:
    """Write one unit's record; a snapshot drops the records it supersedes. Called in
    the unit's transaction, holding the session row lock."""
    rows_insert(StateRecord, [StateRecord(session=session, seq=record.seq, snapshot=record.snapshot, data=record.text,
                                          size=record.size)])
    if record.snapshot:
        StateRecord.objects.filter(session=session, seq__lt=record.seq).delete()


def session_gateway_state(session) -> dict[str, Any]:
    """The session's gateway state as dump_state gave it; {} before its first unit."""
    stored = gateway_state_read(session)
    return stored.state if stored is not None else {}
