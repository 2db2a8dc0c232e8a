"""Beat's sweep: its decisions as plain functions, and one pass over real sessions that
reads no session's JSON state."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions.models import Approval, Session, SessionMessage, Task
from sessions.runtime import states
from sessions.runtime.claims import over_time_limit
from sessions.sweep import dead_leases, sessions_sweep, should_wake
from tests.rooms.factories import make_agent, make_room, make_user

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _never(*_args):
    raise AssertionError("asked although an earlier answer decided")


def _wake(**overrides) -> bool:
    facts = {"state": states.WAITING, "wake_at": NOW + timedelta(minutes=5), "now": NOW, "approval_pending": False,
             "input_pending": lambda: False, "waits_on": lambda: None, "jobs_done": _never}
    return should_wake(**{**facts, **overrides})


def test_a_session_awaiting_approval_wakes_once_nothing_is_pending_whatever_its_timer():
    assert _wake(state=states.AWAITING_APPROVAL, approval_pending=False, input_pending=_never)
    assert not _wake(state=states.AWAITING_APPROVAL, approval_pending=True, wake_at=NOW - timedelta(hours=1),
                     input_pending=_never)


def test_a_waiting_session_wakes_at_its_time_without_asking_anything_else():
    assert _wake(wake_at=NOW, input_pending=_never, waits_on=_never)
    assert _wake(wake_at=None, input_pending=_never, waits_on=_never)


def test_a_waiting_session_wakes_early_for_a_person_or_for_its_jobs_ending():
    assert _wake(input_pending=lambda: True, waits_on=_never)
    assert not _wake()  # nothing awaited, time not come
    assert _wake(waits_on=lambda: {"handles": ["j1"]}, jobs_done=lambda arguments: arguments == {"handles": ["j1"]})
    assert not _wake(waits_on=lambda: {"handles": ["j1"]}, jobs_done=lambda arguments: False)


def test_a_started_session_is_over_its_limit_from_the_instant_the_limit_ends_until_it_ends():
    started = NOW - timedelta(seconds=60)
    assert over_time_limit(state=states.RUNNING, started_at=started, time_limit_seconds=60, now=NOW)
    assert not over_time_limit(state=states.RUNNING, started_at=started, time_limit_seconds=61, now=NOW)
    assert over_time_limit(state=states.WAITING, started_at=started, time_limit_seconds=1, now=NOW)
    assert not over_time_limit(state=states.QUEUED, started_at=None, time_limit_seconds=1, now=NOW)
    for ended in (*states.TERMINAL, states.NEEDS_MERGE):
        assert not over_time_limit(state=ended, started_at=started, time_limit_seconds=1, now=NOW)


def test_only_leases_of_owners_seen_dead_end_early():
    held = [(1, "here:10:a"), (2, "here:11:b"), (3, "elsewhere:10:c")]
    assert dead_leases(held, gone=lambda owner: owner == "here:11:b") == [(2, "here:11:b")]


# Any reference to a whole JSON state column; reading one key is allowed (PostgreSQL's
# -> or #>, SQLite's JSON_EXTRACT/JSON_TYPE of the column at a '$."key"' path).
WHOLE_STATE = re.compile(r'"(gateway_state|runtime_state)"(?!\s*(->|#>|,\s*\'\$\."))')


@pytest.mark.django_db(transaction=True)
def test_one_sweep_wakes_times_out_and_expires_without_reading_any_sessions_json_state():
    owner, agent = make_user("owner"), make_agent("fixer")
    room = make_room(owner, agents=[agent])
    task = Task.objects.create(room=room, title="Fix it", objective="make tests pass")
    now = timezone.now()
    bulky = {"observations": [{"text": "x" * 1000}] * 50}
    later = now + timedelta(hours=1)

    def session(state: str, **fields) -> Session:
        fields.setdefault("started_at", now)
        return Session.objects.create(task=task, agent=agent, state=state, gateway_state=bulky,
                                      attempt=Session.objects.count() + 1, **fields)

    awaiting_job = session(states.WAITING, wake_at=later, runtime_state={
        "chat_cursor": 0, "next_call": 1, "calls": [
            {"id": "c1", "name": "shell", "arguments": {"command": "x" * 5000}},
            {"id": "c2", "name": "await", "arguments": {"handles": ["gone-job"]}}]})
    sleeping = session(states.WAITING, wake_at=later, runtime_state={
        "chat_cursor": 0, "next_call": 0, "calls": [{"id": "c3", "name": "shell", "arguments": {}}]})
    decided = session(states.AWAITING_APPROVAL, wake_at=later, runtime_state={"calls": []})
    Approval.objects.create(session=decided, call_id="d", tool="shell", state="approved", expires_at=later)
    expiring = session(states.AWAITING_APPROVAL, wake_at=later, runtime_state={"calls": []})
    Approval.objects.create(session=expiring, call_id="e", tool="shell", expires_at=now - timedelta(seconds=1))
    overdue = session(states.RUNNING, time_limit_seconds=60, started_at=now - timedelta(hours=1),
                      runtime_state={"calls": []})

    with CaptureQueriesContext(connection) as queries:
        counts = sessions_sweep()

    assert counts["expired_approvals"] == 1 and counts["timed_out"] == 1
    assert counts["woken"] == 2  # the job it awaits is unknown (ready at once), and the decision
    states_now = dict(Session.objects.values_list("pk", "state"))
    assert states_now[awaiting_job.pk] == states_now[decided.pk] == states_now[expiring.pk] == states.QUEUED
    assert states_now[sleeping.pk] == states.WAITING and states_now[overdue.pk] == states.TIMED_OUT
    sql = [query["sql"] for query in queries.captured_queries]
    assert any("runtime_state" in statement for statement in sql)  # keys were read, by key
    assert [statement for statement in sql if WHOLE_STATE.search(statement)] == []


@pytest.mark.django_db
def test_a_session_parked_on_a_review_round_is_not_woken_by_a_message_only_by_its_time():
    from rooms.models import Message

    owner, agent = make_user("owner"), make_agent("fixer")
    room = make_room(owner, agents=[agent])
    task = Task.objects.create(room=room, title="Fix it", objective="make tests pass")
    later = timezone.now() + timedelta(hours=1)
    parked = Session.objects.create(task=task, agent=agent, state=states.WAITING, wake_at=later,
                                    runtime_state={"phase": "review", "review_round": 1, "calls": []})
    other = Session.objects.create(task=task, agent=agent, state=states.WAITING, wake_at=later, attempt=2,
                                   runtime_state={"phase": "boundary", "calls": []})
    for session in (parked, other):
        message = Message.objects.create(room=room, seq=100 + session.pk, kind=Message.Kind.STEER, text="hurry",
                                         author=owner, agent=agent)
        SessionMessage.objects.create(message=message, session=session)
    assert sessions_sweep()["woken"] == 1
    assert dict(Session.objects.values_list("pk", "state")) == {parked.pk: states.WAITING, other.pk: states.QUEUED}
