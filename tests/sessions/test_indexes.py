"""The queries beat's sweep and the dispatcher run every few seconds are served by an
index, not by reading every session and approval ever made."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from sessions import dispatch
from sessions.models import Approval, Session, SessionEvent, Task
from sessions.runtime import states
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished_history():
    """Many finished sessions and decided approvals beside a few live ones."""
    owner = make_user("olga")
    agent = make_agent("fixer")
    room = make_room(owner, "Busy room", agents=[agent])
    task = Task.objects.create(room=room, title="t", objective="o")
    done = Session.objects.bulk_create(
        Session(task=task, agent=agent, attempt=n, state=states.SUCCEEDED) for n in range(1, 2001))
    live = [Session.objects.create(task=task, agent=agent, attempt=3000 + n, state=state)
            for n, state in enumerate(sorted(states.ACTIVE))]
    later = timezone.now() + timedelta(minutes=5)
    Approval.objects.bulk_create(
        Approval(session=s, call_id="c", tool="shell", state=Approval.State.APPROVED, expires_at=later)
        for s in done)
    Approval.objects.create(session=live[0], call_id="c", tool="shell", expires_at=later)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE agents_session; ANALYZE agents_approval")


def plan(queryset) -> str:
    with transaction.atomic(), connection.cursor() as cursor:
        # Tables this small are read whole otherwise; what matters is that an index fits.
        cursor.execute("SET LOCAL enable_seqscan = off")
        return queryset.explain()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="EXPLAIN's output is PostgreSQL's")
def test_the_sweeps_and_the_dispatchers_queries_use_an_index(finished_history):
    now = timezone.now()
    live = [
        Session.objects.filter(dispatch.claimable(now)),  # dispatch.candidates, turns_missing
        Session.objects.filter(state=states.RUNNING, lease_expires_at__gte=now).exclude(lease_owner=""),
        Session.objects.filter(state__in=states.PARKED),
        Session.objects.filter(~Q(state__in=states.TERMINAL | {states.NEEDS_MERGE}), started_at__isnull=False),
    ]
    for queryset in live:
        assert "session_live" in plan(queryset), plan(queryset)
    expiring = Approval.objects.filter(state=Approval.State.PENDING, expires_at__lte=now)
    assert "approval_expiry" in plan(expiring)


def test_the_indexes_exist():
    with connection.cursor() as cursor:
        session = connection.introspection.get_constraints(cursor, Session._meta.db_table)
        approval = connection.introspection.get_constraints(cursor, Approval._meta.db_table)
    assert session["session_live"]["columns"] == ["state"]
    assert approval["approval_expiry"]["columns"] == ["state", "expires_at"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="EXPLAIN's output is PostgreSQL's")
def test_the_room_pages_question_whether_a_session_raised_an_alarm_reads_no_log():
    """The work region asks it of every session on every reload; a long session has
    thousands of events."""
    owner = make_user("olga")
    agent = make_agent("fixer")
    room = make_room(owner, "Long room", agents=[agent])
    task = Task.objects.create(room=room, title="t", objective="o")
    session = Session.objects.create(task=task, agent=agent)
    kinds = ("step.started", "model.reply", "tool.result", "tool.result")
    SessionEvent.objects.bulk_create(SessionEvent(session=session, seq=n + 1, kind=kinds[n % 4], payload={})
                                     for n in range(4000))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE agents_sessionevent")
    alarm = SessionEvent.objects.filter(session=session, kind="loop.suspected")
    assert "sessionevent_kind" in plan(alarm), plan(alarm)
