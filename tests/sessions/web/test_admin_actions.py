"""The admin's session list and its two actions: dispatch retry and cancel."""

from __future__ import annotations

import time

import pytest
from django.contrib.admin.models import LogEntry
from django.test import Client

from rooms.models import RoomAgent
from sessions.models import Session, SessionEvent, Task
from sessions.services.tasks import task_create
from tests.rooms.factories import make_user
from tests.sessions.web.conftest import session_in

pytestmark = pytest.mark.django_db(transaction=True)

CHANGELIST = "/admin/agent_sessions/session/"


@pytest.fixture
def staff(transactional_db) -> Client:
    """A superuser who is in no room: the admin acts for the hub, not as a member."""
    user = make_user("admin")
    user.is_staff = user.is_superuser = True
    user.save()
    client = Client()
    client.force_login(user)
    return client


def act(client: Client, action: str, sessions: list[Session]) -> list[str]:
    response = client.post(CHANGELIST, {"action": action, "_selected_action": [s.pk for s in sessions]}, follow=True)
    assert response.status_code == 200
    return [str(m) for m in response.context["messages"]]


def test_the_session_list_shows_state_attempt_tokens_and_duration_and_filters(staff, task, agent, room):
    session_in(task, agent, "succeeded", tokens_input=4_321, tokens_cached=4_000, tokens_output=99)
    html = staff.get(CHANGELIST).content.decode()
    for column in ("column-state", "column-attempt", "column-agent", "column-task", "column-room",
                   "column-tokens_input", "column-tokens_cached", "column-tokens_output", "column-duration"):
        assert column in html, column
    assert "4321" in html and "Work room" in html
    assert staff.get(CHANGELIST, {"state": "succeeded"}).context["cl"].result_count == 1
    assert staff.get(CHANGELIST, {"state": "failed"}).context["cl"].result_count == 0
    assert staff.get(CHANGELIST, {"task__room__id__exact": room.pk}).context["cl"].result_count == 1
    assert staff.get(CHANGELIST, {"q": "work room"}).context["cl"].result_count == 1
    for url in ("/admin/agent_sessions/sessionevent/", "/admin/agent_sessions/providercall/", "/admin/agent_sessions/approval/",
                "/admin/agent_sessions/approvalrule/"):
        assert staff.get(url).status_code == 200, url


def test_dispatch_retry_creates_the_next_attempt_linked_to_the_previous_one(staff, task, agent):
    failed = session_in(task, agent, "failed", reason="verify failed")
    timed_out = session_in(task, agent, "timed_out")
    messages = act(staff, "dispatch_retry", [failed, timed_out])
    retry = Session.objects.get(previous__isnull=False)
    # Attempt 3 follows attempt 2, the latest: never "attempt 3 after attempt 1".
    assert (retry.previous_id, retry.attempt, retry.state, retry.task, retry.agent) == (
        timed_out.pk, 3, "queued", task, agent)
    assert retry.created_by.username == "admin"  # who dispatched it
    assert messages == [
        f"Retry dispatched: session {retry.pk} (attempt 3 of fixer on “Fix median”, after attempt 2).",
        f"Session {failed.pk} not retried: Attempt 1 is not the latest: attempt 2 came after it; retry that one.",
    ]
    # A fresh ledger: the new attempt starts with nothing but its queued event.
    assert list(SessionEvent.objects.filter(session=retry).values_list("kind", flat=True)) == [
        "session.state_changed"]
    assert LogEntry.objects.filter(object_id=str(retry.pk)).exists()


def test_dispatch_retry_reports_active_and_already_retried_sessions_instead_of_crashing(staff, task, agent):
    failed = session_in(task, agent, "failed")
    act(staff, "dispatch_retry", [failed])
    retry = Session.objects.get(previous=failed)
    messages = act(staff, "dispatch_retry", [retry, failed])
    assert messages == [
        f"Session {failed.pk} not retried: Attempt 1 was already retried as attempt 2.",
        f"Session {retry.pk} not retried: Attempt 2 is still queued; cancel it before retrying.",
    ]


def test_cancel_ends_active_sessions_and_reports_the_ones_already_ended(staff, task, agent):
    running = session_in(task, agent, "running")
    waiting = session_in(task, agent, "waiting")
    done = session_in(task, agent, "succeeded")
    messages = act(staff, "cancel", [running, waiting, done])
    assert messages == [
        f"Cancelled session {running.pk}, session {waiting.pk}.",
        f"Session {done.pk} not cancelled: The session already ended (succeeded).",
    ]
    states = dict(Session.objects.values_list("pk", "state"))
    assert (states[running.pk], states[waiting.pk], states[done.pk]) == ("cancelled", "cancelled", "succeeded")
    running.refresh_from_db()
    assert running.reason == "cancelled by admin in the admin"


def test_an_admin_retry_runs_on_a_real_worker_to_a_verified_merge(celery_worker, staff, demo_room, owner):
    """Attempt 1 was cancelled before it ran; the admin dispatches attempt 2 and a real
    Celery worker runs the replay session: reads, tests, edit, verify, merge."""
    fixer = RoomAgent.objects.get(room=demo_room).agent
    task: Task = task_create(room=demo_room, actor=owner, title="Fix median", objective="Make the tests pass")
    first = session_in(task, fixer, "cancelled", reason="cancelled by olga")
    act(staff, "dispatch_retry", [first])
    retry = Session.objects.get(previous=first)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        retry.refresh_from_db()
        if retry.state in {"succeeded", "failed", "cancelled", "timed_out", "needs_merge"}:
            break
        time.sleep(0.3)
    assert retry.state == "succeeded", f"{retry.state}: {retry.reason}\n{celery_worker.hub_process.log_tail()}"
    assert retry.attempt == 2 and "merged" in retry.reason
    verify = SessionEvent.objects.get(session=retry, kind="verify")
    assert verify.payload["line"].startswith("verify #1: python -m pytest -q → exit 0")
    first.refresh_from_db()
    assert first.state == "cancelled"  # the previous attempt is left as it was
