"""What the room's shared store saves across sessions, and the room page panel that shows it."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from observations.models import Blob
from rooms.models import Room
from rooms.services import room_create
from sessions.ledger.selectors import (
    STORE_SAVINGS_SQL,
    StoreSavings,
    room_store_savings,
    store_savings_of,
)
from sessions.ledger.sync import observations_sync
from sessions.models import Observation, Session
from tests.gateway.factories import call, file_text, make_context, read_input, shell_input

pytestmark = pytest.mark.django_db

A, B, C = file_text("src/a.py", 0, 40), file_text("src/b.py", 0, 25), file_text("src/c.py", 0, 10)
LS = "src\nREADME.md\n"


def size(text: str) -> int:
    return len(text.encode())


def session_reads(session, reads) -> None:
    """One session's run: each (call id, input) read in a step of its own, rows synced as
    the worker does (the room cache and the blob store are shared by the room)."""
    ctx = make_context()
    for call_id, source in reads:
        ctx.prepare()
        ctx.add_assistant(f"step {call_id}", (call(call_id, source.tool, **source.arguments),))
        ctx.add_tool_result(source)
        observations_sync(session=session, ctx=ctx)


@pytest.fixture
def known_room(make_session):
    """Two sessions read the same src/a.py (the first twice), one reads another file."""
    first, second, third = make_session(1), make_session(2), make_session(3)
    session_reads(first, [("c1", read_input("c1", "src/a.py", A)), ("c2", shell_input("c2", "ls src", LS)),
                          ("c3", read_input("c3", "src/a.py", A))])
    session_reads(second, [("c1", read_input("c1", "src/a.py", A)), ("c2", read_input("c2", "src/b.py", B))])
    session_reads(third, [("c1", read_input("c1", "src/c.py", C))])
    return first.task.room


def test_a_room_with_known_reads_gives_exact_figures(known_room):
    savings = room_store_savings(known_room.pk)

    assert savings == StoreSavings(
        observations=6,
        sessions=3,
        observed_bytes=3 * size(A) + size(LS) + size(B) + size(C),
        per_session_bytes=2 * size(A) + size(LS) + size(B) + size(C),
        stored_bytes=size(A) + size(LS) + size(B) + size(C),
        shared_reads=1,  # the second session's read of src/a.py: the first stored it
        shared_read_bytes=size(A),
    )
    assert savings.saved_across_sessions == size(A)
    assert savings.saved_bytes == 2 * size(A)
    # What the store holds is what the figures say it holds.
    blobs = Blob.objects.filter(observations__room=known_room).distinct()
    assert sum(b.size for b in blobs) == savings.stored_bytes


def test_a_room_without_sessions_saves_nothing_and_its_panel_says_so(owner):
    room = room_create(owner=owner, name="Empty room")
    assert room_store_savings(room.pk) == StoreSavings()
    client = Client()
    client.force_login(owner)
    response = client.get(reverse("sessions:room_store", args=[room.slug]))
    assert response.status_code == 200
    assert b"No tool results yet" in response.content
    assert b"data-figure" not in response.content


def test_the_room_page_loads_the_panel_that_shows_the_figures(known_room, owner):
    client = Client()
    client.force_login(owner)
    page = client.get(reverse("room", args=[known_room.slug])).content.decode()
    url = reverse("sessions:room_store", args=[known_room.slug])
    assert 'id="room-store"' in page and f'hx-get="{url}"' in page and "load, session-changed" in page

    panel = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    stored = size(A) + size(LS) + size(B) + size(C)
    assert f'data-figure="stored" data-bytes="{stored}"' in panel
    assert f'data-figure="per-session" data-bytes="{stored + size(A)}"' in panel
    assert f'data-figure="observed" data-bytes="{stored + 2 * size(A)}"' in panel
    assert f'data-figure="saved-across" data-bytes="{size(A)}"' in panel
    assert f'data-figure="shared-reads" data-count="1" data-bytes="{size(A)}"' in panel
    assert "6 tool results of 3 sessions" in panel
    assert "load, session-changed" not in panel  # loaded once; reloads only when a session changes
    # The panel shows figures, never what a session read.
    assert "src/a.py" not in panel and A.splitlines()[0] not in panel


@pytest.mark.skipif(connection.vendor != "postgresql", reason="EXPLAIN's output is PostgreSQL's")
def test_the_figures_are_read_from_the_room_store_index(known_room):
    sql = STORE_SAVINGS_SQL.format(table=connection.ops.quote_name(Observation._meta.db_table))
    with transaction.atomic(), connection.cursor() as cursor:
        # Tables this small are read whole and hashed, and the choice between indexes then
        # rests on whatever statistics earlier tests left. What matters is that the index
        # gives a room's rows already grouped, so no plan without it avoids a sort.
        for method in ("seqscan", "hashagg", "sort"):
            cursor.execute(f"SET LOCAL enable_{method} = off")
        cursor.execute("EXPLAIN " + sql, [known_room.pk])
        plan = "\n".join(line for (line,) in cursor.fetchall())
    assert "room_store" in plan, plan


def test_people_outside_the_room_get_no_panel(known_room, django_user_model):
    stranger = django_user_model.objects.create_user("stranger", password="pw-stranger-1")
    client = Client()
    client.force_login(stranger)
    assert client.get(reverse("sessions:room_store", args=[known_room.slug])).status_code == 404


# Rows: (session 0-3, blob 0-5), in the order they were stored; blob n has n*100+1 bytes.
store_rows = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5)), max_size=25)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=store_rows, elsewhere=store_rows)
def test_the_query_agrees_with_the_definition_for_any_rows(make_session, owner, rows, elsewhere):
    # Examples share the test's transaction: the sessions and the other room are made once.
    first = make_session(1) if not Session.objects.exists() else Session.objects.get(attempt=1)
    sessions = [first] + [Session.objects.get_or_create(task=first.task, agent=first.agent, attempt=n + 1)[0]
                          for n in range(1, 4)]
    room = first.task.room
    other = Room.objects.exclude(pk=room.pk).first() or room_create(owner=owner, name="Elsewhere")
    Observation.objects.all().delete()
    blobs = [f"{n:064x}" for n in range(6)]
    for n, sha in enumerate(blobs):
        Blob.objects.get_or_create(sha256=sha, defaults={"size": n * 100 + 1, "token_estimate": 1, "data": b""})
    made = []
    for where, batch in ((room, rows), (other, elsewhere)):
        for session_n, blob_n in batch:
            seq = Observation.objects.filter(session=sessions[session_n]).count()
            made.append(Observation.objects.create(
                room=where, session=sessions[session_n], seq=seq, step=seq, call_id=f"c{seq}", tool="read_file",
                args_key="k", blob_id=blobs[blob_n], size=blob_n * 100 + 1, token_estimate=1))
    expected = store_savings_of([(o.pk, o.session_id, o.blob_id, o.size) for o in made if o.room_id == room.pk])
    assert room_store_savings(room.pk) == expected
