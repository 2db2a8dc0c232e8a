"""Session services and beat's sweep, in the test process (no worker needed)."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from rooms.errors import RoomError, RoomPermissionError
from rooms.models import Membership
from sessions.models import Approval, ApprovalRule, Observation, Session, SessionEvent
from sessions.services.approvals import approval_decide
from sessions.services.lifecycle import session_cancel, session_retry, session_start
from sessions.services.talk import session_steer
from sessions.services.tasks import task_create
from sessions.tasks import sweep_sessions
from sessions.worker.job_journal import DatabaseJournal, journaled
from sessions.worker.run import run_session


@pytest.fixture
def task(person, demo_room):
    return task_create(room=demo_room, actor=person, title="Fix median", objective="Make the tests pass")


def test_a_retry_is_attempt_n_plus_one_with_a_fresh_ledger_and_the_room_cache_kept(person, task, replay_agent,
                                                                                 demo_room):
    first = session_start(task=task, agent=replay_agent, actor=person)
    run_session(first.pk)  # reads, then parks on the first shell call (no rules yet)
    session_cancel(session=first, actor=person)
    ApprovalRule.objects.create(room=demo_room, tool="*", decision="allow")
    retry = session_retry(session=first, actor=person)
    assert (retry.attempt, retry.previous_id, retry.state) == (2, first.pk, "queued")
    assert retry.gateway_state == {} and retry.runtime_state == {}
    run_session(retry.pk)
    retry.refresh_from_db()
    assert retry.state == "succeeded", retry.reason
    # A fresh ledger: the retry got every file whole again, never a note about the first attempt.
    first_reads = Observation.objects.filter(session=first, tool="read_file")
    retry_reads = Observation.objects.filter(session=retry, tool="read_file")
    assert first_reads.count() == retry_reads.count() == 2
    assert set(retry_reads.values_list("served", flat=True)) == {"text"}
    # The room cache kept: the same bytes are one blob shared by both attempts.
    assert set(first_reads.values_list("blob_id", flat=True)) == set(retry_reads.values_list("blob_id", flat=True))


def test_cancel_ends_a_session_and_a_second_cancel_is_refused(person, task, replay_agent):
    session = session_start(task=task, agent=replay_agent, actor=person)
    assert session_cancel(session=session, actor=person)
    session.refresh_from_db()
    assert session.state == "cancelled" and "pat" in session.reason
    with pytest.raises(RoomError, match="already ended"):
        session_cancel(session=session, actor=person)
    assert run_session(session.pk) == "not claimable"


def test_viewers_cannot_start_steer_or_decide(person, task, replay_agent, demo_room):
    viewer = get_user_model().objects.create_user("vic", password="pw-vic-123456")
    Membership.objects.create(room=demo_room, user=viewer, role="viewer")
    with pytest.raises(RoomPermissionError):
        session_start(task=task, agent=replay_agent, actor=viewer)
    session = session_start(task=task, agent=replay_agent, actor=person)
    with pytest.raises(RoomPermissionError):
        session_steer(session=session, actor=viewer, text="stop")


def test_an_unanswered_approval_is_denied_after_the_timeout_and_the_session_goes_on(person, task, replay_agent):
    session = session_start(task=task, agent=replay_agent, actor=person)
    run_session(session.pk)
    approval = Approval.objects.get(session=session)
    Approval.objects.filter(pk=approval.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    counts = sweep_sessions()
    assert counts["expired_approvals"] == 1
    session.refresh_from_db()
    assert session.state == "queued"
    with pytest.raises(RoomError, match="already decided"):
        approval_decide(approval=approval, actor=person, decision="approve")
    run_session(session.pk)
    result = SessionEvent.objects.filter(session=session, kind="tool.result").last()
    assert result.payload["is_error"] and "nobody approved it in time" in result.payload["preview"]


def test_a_session_over_its_time_limit_is_timed_out_by_the_sweep(person, task, replay_agent):
    session = session_start(task=task, agent=replay_agent, actor=person)
    run_session(session.pk)  # parks on the first approval
    Session.objects.filter(pk=session.pk).update(started_at=timezone.now() - timedelta(hours=2))
    assert sweep_sessions()["timed_out"] == 1
    session.refresh_from_db()
    assert session.state == "timed_out" and "limit of 3600 s" in session.reason


def test_a_steer_wakes_a_parked_session(person, task, replay_agent):
    session = session_start(task=task, agent=replay_agent, actor=person)
    run_session(session.pk)
    session.refresh_from_db()
    assert session.state == "awaiting_approval"
    message = session_steer(session=session, actor=person, text="Only touch textstats.py")
    session.refresh_from_db()
    assert session.state == "queued" and message.session_link.session_id == session.pk and message.delivered_at is None


def test_a_steer_to_an_ended_session_is_refused(person, task, replay_agent):
    session = session_start(task=task, agent=replay_agent, actor=person)
    session_cancel(session=session, actor=person)
    with pytest.raises(RoomError, match="ended"):
        session_steer(session=session, actor=person, text="hello?")


def test_only_an_ended_attempt_is_retried_and_only_once(person, task, replay_agent):
    session = session_start(task=task, agent=replay_agent, actor=person)
    with pytest.raises(RoomError, match="still queued"):
        session_retry(session=session, actor=person)
    session_cancel(session=session, actor=person)
    staff = get_user_model().objects.create_user("admin", password="pw-admin-123", is_staff=True)
    retry = session_retry(session=session, actor=None, dispatched_by=staff)
    assert retry.created_by == staff and retry.attempt == 2
    with pytest.raises(RoomError, match="already retried as attempt 2"):
        session_retry(session=session, actor=person)


def test_attempts_follow_each_other_however_they_are_started(person, task, replay_agent):
    """Started from the task's button or retried, attempt N+1 links to attempt N; an
    older attempt cannot be retried past a newer one."""
    first = session_start(task=task, agent=replay_agent, actor=person)
    session_cancel(session=first, actor=person)
    second = session_start(task=task, agent=replay_agent, actor=person)  # the button, not "Retry"
    assert (second.attempt, second.previous_id) == (2, first.pk)
    session_cancel(session=second, actor=person)
    with pytest.raises(RoomError, match="already retried as attempt 2"):
        session_retry(session=first, actor=person)
    third = session_retry(session=second, actor=person)
    assert (third.attempt, third.previous_id) == (3, second.pk)


def test_the_sweep_wakes_a_session_parked_on_a_job_that_went_silent_and_ends_the_job(person, task, replay_agent,
                                                                                    settings):
    """Beat judges a parked session's jobs itself: a job with no output for the silence
    limit is recorded dead (its processes killed) and the session woken to hear it."""
    from agents.tools.box import ToolBox
    from observations.gateway.messages import ToolCall

    settings.ATRIUM_JOB_SILENCE_SECONDS = 2
    session = session_start(task=task, agent=replay_agent, actor=person)
    box = ToolBox(worktree=Path(task.room.repo_path), state_dir=Path(settings.JOBS_DIR) / str(session.pk),
                  yield_seconds=0.2, job_journal=DatabaseJournal(session.pk) if journaled() else None)
    outcome = box.execute(ToolCall("c1", "shell", {"command": "echo once; exec sleep 600"}))
    Session.objects.filter(pk=session.pk).update(
        state="waiting", wake_at=timezone.now() + timedelta(hours=1),
        runtime_state={"phase": "calls", "next_call": 0,
                       "calls": [{"id": "c2", "name": "await", "arguments": {"handles": [outcome.job_handle]}}]})
    assert sweep_sessions()["woken"] == 0  # still within the silence limit
    time.sleep(2.5)
    assert sweep_sessions()["woken"] == 1
    session.refresh_from_db()
    assert session.state == "queued"
    status = box.jobs.status(outcome.job_handle)
    assert status.state == "dead" and status.reason.startswith("no output for")
