"""A session's event log: seqs handed out in order, broadcast after commit."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from sessions import events
from sessions.events import session_event_append, session_events_append
from sessions.models import Session, SessionEvent, Task
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def session() -> Session:
    owner = make_user("olga")
    room = make_room(owner, "Events room")
    task = Task.objects.create(room=room, title="Fix it", objective="Fix it", created_by=owner)
    return Session.objects.select_related("task").get(pk=Session.objects.create(task=task, agent=make_agent("fixer")).pk)


def test_a_units_events_get_the_next_seqs_in_order_in_two_queries_and_leave_after_commit(session, monkeypatch):
    sent = []
    monkeypatch.setattr(events, "_send", lambda group, message: sent.append((group, message)))
    with transaction.atomic():
        session_event_append(session, "session.claimed", {"worker": "w"})
        session.step, session.runtime_state = 7, {"chat_cursor": 3}
        with CaptureQueriesContext(connection) as queries:
            rows = session_events_append(session, [("step.started", {"step": 1}), ("model.reply", {"text": "hi"}),
                                                   ("session.state_changed", {"state": "waiting"})],
                                         fields=["step", "runtime_state"])
        assert len(queries) == 2  # however many events a unit commits, its session's fields with them
        assert sent == []  # nothing leaves before the commit
    assert [r.seq for r in rows] == [2, 3, 4]
    assert list(SessionEvent.objects.filter(session=session).values_list("seq", "kind")) == [
        (1, "session.claimed"), (2, "step.started"), (3, "model.reply"), (4, "session.state_changed")]
    saved = Session.objects.get(pk=session.pk)
    assert (saved.last_event_seq, saved.step, saved.runtime_state) == (4, 7, {"chat_cursor": 3})
    assert session.last_event_seq == 4
    assert [m["frame"]["seq"] for g, m in sent if g == f"session.{session.pk}"] == [1, 2, 3, 4]
    assert [m for g, m in sent if g == f"room.{session.task.room_id}"] == [
        {"type": events.ROOM_SESSION_CHANGED, "session": session.pk, "state": "waiting"}]
    assert session_events_append(session, []) == []
