"""The worker's own rules, in this process: time slices, time limits, waking parked
sessions, and who a steer belongs to."""

from __future__ import annotations

import time
from datetime import timedelta

from django.utils import timezone

from agents.models import AgentProfile
from rooms.models import RoomAgent
from rooms.services import message_post
from sessions.models import Approval, ApprovalRule, Session, SessionEvent
from sessions.services.lifecycle import session_start
from sessions.services.tasks import task_create
from sessions.tasks import sweep_sessions
from sessions.worker.inputs import has_pending_input, pending_inputs
from sessions.worker.run import run_session


def states_of(session) -> list[str]:
    return [e.payload["state"] for e in SessionEvent.objects.filter(session=session, kind="session.state_changed")]


def start(person, room, agent):
    task = task_create(room=room, actor=person, title="Fix median", objective="Make the tests pass")
    return session_start(task=task, agent=agent, actor=person)


def test_a_used_up_time_slice_puts_the_session_back_in_the_queue(settings, person, demo_room, replay_agent,
                                                                 allow_demo_tools):
    settings.ATRIUM_WORKER_SLICE_SECONDS = 0
    session = start(person, demo_room, replay_agent)
    turns = 0
    while run_session(session.pk) == "ran" and turns < 40:
        session.refresh_from_db()
        if session.state != "running" or session.lease_owner:
            break
        turns += 1  # the turn was given back: running for people, but no worker holds it
    assert session.state == "succeeded", session.reason
    claims = SessionEvent.objects.filter(session=session, kind="session.claimed").count()
    assert turns > 5 and claims == turns + 1
    # Giving a turn back is not a state change: room pages are not disturbed by it.
    assert states_of(session) == ["queued", "running", "succeeded"]


def test_the_runner_enforces_the_time_limit_itself(person, demo_room, replay_agent, allow_demo_tools):
    session = start(person, demo_room, replay_agent)
    Session.objects.filter(pk=session.pk).update(time_limit_seconds=1, started_at=timezone.now() - timedelta(seconds=5))
    run_session(session.pk)
    session.refresh_from_db()
    assert session.state == "timed_out" and "limit of 1 s" in session.reason


def test_an_approval_decided_while_the_worker_parks_does_not_strand_the_session(person, demo_room, replay_agent):
    session = start(person, demo_room, replay_agent)
    run_session(session.pk)  # parks on the first shell call
    session.refresh_from_db()
    approval = Approval.objects.get(session=session)
    # The decision lands between the worker reading "pending" and parking: the row says
    # approved, the session still says awaiting_approval, and nothing re-queued it.
    Approval.objects.filter(pk=approval.pk).update(state="approved", decided_at=timezone.now())
    assert sweep_sessions()["woken"] == 1
    session.refresh_from_db()
    assert session.state == "queued"


def test_a_parked_await_wakes_when_its_job_ends_not_at_its_deadline(settings, person, demo_room):
    settings.ATRIUM_SHELL_YIELD_SECONDS = 0.3
    ApprovalRule.objects.create(room=demo_room, tool="shell", decision="allow")
    demo_room.check_command = ""
    demo_room.save()
    agent = AgentProfile.objects.create(name="builder", model="replay:short-job.json",
                                        context_window=32_000, output_budget=2_000)
    RoomAgent.objects.create(room=demo_room, agent=agent)
    session = start(person, demo_room, agent)
    run_session(session.pk)
    session.refresh_from_db()
    assert session.state == "waiting" and session.wake_at > timezone.now() + timedelta(minutes=30)
    assert sweep_sessions()["woken"] == 0  # the job still runs
    # The worker that parked it watches the job: its end wakes the session, no sweep needed.
    deadline = time.monotonic() + 10
    while Session.objects.get(pk=session.pk).state == "waiting" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert Session.objects.get(pk=session.pk).state == "queued"
    assert time.monotonic() < deadline - 6  # at the job's end (~2 s), long before its deadline
    run_session(session.pk)
    session.refresh_from_db()
    assert session.state == "succeeded", session.reason
    result = SessionEvent.objects.filter(session=session, kind="tool.result", payload__tool="await").get()
    assert "built" in result.payload["preview"]


def test_a_steer_to_the_agent_goes_to_one_of_its_sessions_only(person, demo_room, replay_agent):
    first, second = start(person, demo_room, replay_agent), start(person, demo_room, replay_agent)
    message_post(room=demo_room, author=person, kind="steer", text="keep it small", agent=replay_agent)
    taken = pending_inputs(first, chat_after=0)
    assert [i.text for i in taken] == ["keep it small"]
    assert pending_inputs(second, chat_after=0) == []
    assert not has_pending_input(second, chat_after=0)


def test_a_mention_names_the_agent_exactly(person, demo_room, replay_agent):
    session = start(person, demo_room, replay_agent)
    message_post(room=demo_room, author=person, kind="chat", text="@fixerbot please look")
    message_post(room=demo_room, author=person, kind="chat", text="thanks @Fixer!")
    assert [i.text for i in pending_inputs(session, chat_after=0)] == ["thanks @Fixer!"]
