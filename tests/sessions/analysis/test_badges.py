"""A loop alarm is visible: on the rooms list, the room's task list and the session page,
while the session is unfinished."""

from __future__ import annotations

from django.db import transaction
from django.urls import reverse

from sessions.events import session_event_append
from sessions.services.lifecycle import session_cancel, session_start
from sessions.services.tasks import task_create

ALARM = {"kind": "reread", "key": "reread:1", "subject": "textstats.py lines 1-21", "count": 3,
         "steps": [1, 2, 3], "step": 3, "nudge": "[hub: loop suspected] You have read textstats.py 3 times."}


def test_a_loop_alarm_shows_on_the_rooms_list_the_room_and_the_session(client, person, demo_room, replay_agent):
    task = task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass")
    session = session_start(task=task, agent=replay_agent, actor=person)
    client.force_login(person)
    assert 'data-badge="loop-suspected"' not in client.get(reverse("room_list")).content.decode()
    with transaction.atomic():
        session_event_append(session, "loop.suspected", ALARM)

    assert 'data-badge="loop-suspected"' in client.get(reverse("room_list")).content.decode()
    room_page = client.get(reverse("room", args=[demo_room.slug])).content.decode()
    row = room_page[room_page.index(f'id="session-row-{session.pk}"'):]
    assert 'data-badge="loop-suspected"' in row[: row.index("</tr>")]
    page = client.get(reverse("sessions:session", args=[session.pk])).content.decode()
    assert 'id="session-loop-badge"' in page and "reread: textstats.py lines 1-21 ×3" in page
    assert "You have read textstats.py 3 times." in page  # the log line and the insights list

    session_cancel(session=session, actor=person)
    assert 'data-badge="loop-suspected"' not in client.get(reverse("room_list")).content.decode()
    room_page = client.get(reverse("room", args=[demo_room.slug])).content.decode()
    assert 'data-badge="loop-alarms">loop alarms (1)' in room_page  # the room's totals keep the count
