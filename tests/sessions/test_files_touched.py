""""Which files did the session change?": its record of changes, whenever it has one
(even one that leaves nothing changed); the gateway's file notes only for a session
from before the record was kept."""

from __future__ import annotations

import pytest

from sessions import selectors
from sessions.models import Session, SessionEvent, Task
from sessions.selectors import session_files_touched, sessions_files_touched
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def sessions_of_a_room():
    owner = make_user("owner")
    room = make_room(owner=owner)
    task = Task.objects.create(room=room, title="t", objective="o", created_by=owner)
    agent = make_agent("builder")
    return [Session.objects.create(task=task, agent=agent, attempt=n) for n in (1, 2, 3)]


def record(session: Session, seq: int, path: str, kind: str) -> None:
    SessionEvent.objects.create(session=session, seq=seq, kind="file.changed",
                                payload={"step": seq, "call_id": f"c{seq}", "path": path, "kind": kind,
                                         "sha256": "", "old_path": "", "inferred": True})


def test_a_record_that_leaves_nothing_changed_is_the_answer_not_the_notes(sessions_of_a_room, monkeypatch):
    reverted, old, editing = sessions_of_a_room
    monkeypatch.setattr(selectors, "session_gateway_state",
                        lambda session: {"files": [{"path": "scratch.py", "written": True}]})
    record(reverted, 1, "scratch.py", "written")
    record(reverted, 2, "scratch.py", "deleted")
    record(editing, 1, "app.py", "written")
    record(editing, 2, "setup.cfg", "written")
    record(editing, 3, "setup.cfg", "restored")
    assert session_files_touched(reverted) == []
    assert session_files_touched(old) == ["scratch.py"]  # no record: from before it was kept
    assert sessions_files_touched([reverted.pk, old.pk, editing.pk]) == {reverted.pk: [], editing.pk: ["app.py"]}
