"""Pages that list or refresh sessions never read the saved loop state: a long
session's state is large, and these pages reload on every change in a room."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from sessions.models import Session
from tests.sessions.web.conftest import HTMX, session_in

pytestmark = pytest.mark.django_db(transaction=True)

BIG_STATE = {"version": 2, "scalars": {}, "entries": [{"text": "x" * 1000}] * 200, "observations": []}


def state_columns_read(queries) -> list[str]:
    return [q["sql"] for q in queries
            if any(f'"{Session._meta.db_table}"."{field}"' in q["sql"] for field in Session.STATE_FIELDS)]


@pytest.fixture
def sessions(task, agent):
    return [session_in(task, agent, state, gateway_state=BIG_STATE, runtime_state={"phase": "calls"})
            for state in ("running", "waiting", "succeeded")]


@pytest.mark.parametrize("name, htmx", [
    ("room", False),  # the room page
    ("sessions:room_tasks", True),  # its work region, reloaded whenever a session changes
    ("sessions:room_totals", True),
])
def test_the_room_page_and_its_reloads_leave_the_state_columns_alone(login, room, member, sessions, name, htmx):
    client = login(member)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse(name, args=[room.slug]), **(HTMX if htmx else {}))
    assert response.status_code == 200
    assert any('"agents_session"' in q["sql"] for q in queries), "the page must have read sessions"
    assert state_columns_read(queries) == []


def test_a_status_refresh_leaves_the_state_columns_alone(login, member, sessions):
    client = login(member)
    for session in sessions:
        with CaptureQueriesContext(connection) as queries:
            response = client.get(reverse("sessions:session_status", args=[session.pk]), **HTMX)
        assert response.status_code == 200
        assert state_columns_read(queries) == []


def test_a_steer_wakes_the_agents_sessions_without_reading_their_state(room, member, agent, sessions):
    from rooms.services import message_post

    with CaptureQueriesContext(connection) as queries:
        message_post(room=room, author=member, kind="steer", text="Stop and explain.", agent=agent)
    assert any('"agents_session"' in q["sql"] for q in queries), "the post must have woken sessions"
    assert state_columns_read(queries) == []
