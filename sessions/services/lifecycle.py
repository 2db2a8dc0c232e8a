"""A session's life: started, moved between states (compare-and-swap), woken, retried,
cancelled, asked for a new segment. Each write is one transaction; queue messages and
broadcasts leave the process only after commit."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from agents.models import AgentProfile
from observations.gateway.policies import ON_DEMAND
from rooms.errors import RoomError
from rooms.models import Room, RoomAgent
from rooms.own_key import check_may_spend_here
from rooms.selectors import check_may_act_in
from sessions.disk_space import low_disk
from sessions.dispatch import jobs_stop_on_commit, not_held, turn_send_on_commit
from sessions.events import session_event_append
from sessions.models import (
    Approval,
    Review,
    Session,
    Task,
)
from sessions.runtime import states
from sessions.worker.doorbell import ring_on_commit

# A queued session's wake_at: workers take queued sessions in its order (after those
# people wait for; sessions.dispatch), so it is the session's place in the queue.
REQUEUE_AFTER = timedelta(seconds=60)



def enqueue_session(session_id: int) -> None:
    """Queue the session for a worker once the current transaction commits."""
    turn_send_on_commit(session_id)


def session_transition(session: Session, target: str, *, reason: str = "", expected: str | None = None) -> bool:
    """Move ``session`` to ``target`` if it is still in ``expected`` (compare-and-swap).

    Returns False when someone else changed the state first; raises InvalidTransition
    for a transition the state machine forbids.
    """
    current = expected or session.state
    states.check_transition(current, target)
    now = timezone.now()
    fields: dict = {"state": target}
    if reason:
        fields["reason"] = reason
    if target in states.TERMINAL or target == states.NEEDS_MERGE:
        fields.update(finished_at=now, lease_owner="", lease_expires_at=None, wake_at=None)
    if target in states.PARKED or target == states.QUEUED:
        fields.update(lease_owner="", lease_expires_at=None)
    if target == states.QUEUED:
        fields.update(wake_at=now + REQUEUE_AFTER)
    updated = Session.objects.filter(pk=session.pk, state=current).update(**fields)
    if updated != 1:
        return False
    for name, value in fields.items():
        setattr(session, name, value)
    session_event_append(session, "session.state_changed", {"state": target, "reason": reason})
    if target in states.TERMINAL:
        _approvals_withdraw(session)
    return True


def _approvals_withdraw(session: Session) -> None:
    """An ended session waits for nobody: its open approval requests expire with it, so
    no card is left to click (a decision could no longer run anything)."""
    now = timezone.now()
    for approval in Approval.objects.filter(session=session, state=Approval.State.PENDING):
        if Approval.objects.filter(pk=approval.pk, state=Approval.State.PENDING).update(
                state=Approval.State.EXPIRED, decided_at=now):
            session_event_append(session, "approval.decided", {
                "approval": approval.pk, "call_id": approval.call_id, "state": "expired", "by": "",
                "reason": f"the session {session.state.replace('_', ' ')}",
            })


@transaction.atomic
def session_start(*, task: Task, agent: AgentProfile, actor: AbstractBaseUser | None,
                  previous: Session | None = None, dispatched_by: AbstractBaseUser | None = None) -> Session:
    """A new attempt of ``agent`` at ``task``, queued for a worker once committed.

    ``actor`` is a room member acting in the room; ``dispatched_by`` is staff acting
    from the admin (no membership needed), recorded as the creator.
    """
    if actor is not None:
        check_may_act_in(task.room, actor)
    if not RoomAgent.objects.filter(room_id=task.room_id, agent=agent).exists():
        raise RoomError(f"{agent.name} is not assigned to this room.", code="unknown_agent")
    check_may_spend_here(agent, task.room_id)
    if (problem := low_disk()) is not None:
        raise RoomError(problem, code="disk")
    Task.objects.select_for_update().filter(pk=task.pk).first()  # serialise attempt numbers
    active = Session.objects.filter(task=task, agent=agent, state__in=states.ACTIVE).first()
    if active is not None:
        # Two attempts of one agent at one task would work the same branch of thought
        # side by side; one at a time.
        raise RoomError(f"{agent.name} is already on this task (attempt {active.attempt}, {active.state}).",
                        code="active")
    latest = Session.objects.filter(task=task, agent=agent).order_by("-attempt").first()
    last = latest.attempt if latest else 0
    if previous is None and latest is not None and not Session.objects.filter(previous=latest).exists():
        previous = latest  # attempt N+1 follows attempt N, however it was started
    session = Session.objects.create(
        task=task, agent=agent, model=agent.model, attempt=last + 1, previous=previous,
        created_by=actor or dispatched_by,
        time_limit_seconds=settings.ATRIUM_SESSION_TIME_LIMIT_SECONDS, wake_at=timezone.now() + REQUEUE_AFTER,
    )
    session_event_append(session, "session.state_changed", {"state": session.state, "attempt": session.attempt,
                                                            "retry_of": previous.pk if previous else None})
    enqueue_session(session.pk)
    return session


@transaction.atomic
def session_retry(*, session: Session, actor: AbstractBaseUser | None,
                  dispatched_by: AbstractBaseUser | None = None) -> Session:
    """Dispatch a retry: attempt N+1 of the same task and agent, fresh ledger, room cache kept.

    Only an attempt that ended, and only once (the row lock makes a double click or two
    admins racing get one retry and one clear refusal): two attempts of one agent at one
    task never run side by side.
    """
    locked = Session.objects.select_for_update().select_related("task", "agent").get(pk=session.pk)
    if locked.origin == Session.Origin.ENDPOINT:
        # Its agent runs elsewhere: a worker here has nothing to run it with.
        raise RoomError("This session's agent runs elsewhere, through a gateway key; its client goes on by "
                        "starting a new conversation.", code="invalid")
    if locked.state not in states.TERMINAL | {states.NEEDS_MERGE}:
        raise RoomError(f"Attempt {locked.attempt} is still {locked.state}; cancel it before retrying.",
                        code="active")
    if Review.objects.filter(reviewer_session=locked).exists():
        # Another attempt would be the reviewer agent working on the task itself.
        raise RoomError("A reviewer's session is not retried: the author's page shows its review round, which "
                        "people can decide there.", code="review")
    if (later := Session.objects.filter(previous=locked).first()) is not None:
        raise RoomError(f"Attempt {locked.attempt} was already retried as attempt {later.attempt}.",
                        code="retried")
    newest = Session.objects.filter(task=locked.task, agent=locked.agent).aggregate(n=Max("attempt"))["n"]
    if newest != locked.attempt:
        raise RoomError(f"Attempt {locked.attempt} is not the latest: attempt {newest} came after it; "
                        "retry that one.", code="retried")
    return session_start(task=locked.task, agent=locked.agent, actor=actor, previous=locked,
                         dispatched_by=dispatched_by)


@transaction.atomic
def session_cancel(*, session: Session, actor: AbstractBaseUser | None, reason: str = "") -> bool:
    if actor is not None:
        check_may_act_in(session.task.room, actor)
    session.refresh_from_db(fields=["state"])
    if session.state in states.TERMINAL:
        raise RoomError(f"The session already ended ({session.state}).", code="ended")
    who = actor.get_username() if actor is not None else "the hub"
    if not session_transition(session, states.CANCELLED, reason=reason or f"cancelled by {who}"):
        raise RoomError("The session changed state just now; look again.", code="conflict")
    jobs_stop_on_commit(session.pk)
    return True


def session_wake(session: Session, *, person: bool = False) -> bool:
    """A parked session has something to look at (a steer, a decision, a job's end, its
    time): queue it. ``person``: someone waits for it, so it goes to the front of the
    queue, parked or not (``attention_mark``). True if it was parked and is now queued."""
    if person:
        attention_mark(session)
        ring_on_commit([session.pk])  # a running shell or await returns to read it
    if session.state not in states.PARKED:
        return False
    if session_transition(session, states.QUEUED, expected=session.state):
        enqueue_session(session.pk)
        return True
    return False


def attention_mark(session: Session) -> bool:
    """A person waits for ``session``: unless a worker holds it (then its next boundary
    reads what they wrote), the next free worker takes it before the rest of the queue
    and running slices yield to it (sessions.dispatch). The first wait's time is kept."""
    now = timezone.now()
    # Only the hub's own sessions wait for a worker; one driven through the gateway
    # endpoint is also row-locked for as long as its client's request runs upstream.
    return bool(Session.objects.filter(not_held(now), pk=session.pk, attention_at__isnull=True,
                                       origin=Session.Origin.HUB).exclude(
        state__in=states.TERMINAL | {states.NEEDS_MERGE}).update(attention_at=now))


@transaction.atomic
def session_request_segment(*, session: Session, actor: AbstractBaseUser) -> None:
    """A person asks for a new segment: the next step boundary starts one (a handoff,
    then a fresh context). Repeated asks before it happens are one ask."""
    check_may_act_in(session.task.room, actor)
    if session.state in states.TERMINAL:
        raise RoomError("This session has ended; a new segment only helps a running one.", code="ended")
    if session.agent.eviction_policy != ON_DEMAND:
        raise RoomError(f"This agent's eviction policy ({session.agent.eviction_policy}) keeps no segments: only "
                        "on demand starts new ones.", code="invalid")
    who = actor.get_username()
    if Session.objects.filter(pk=session.pk, segment_requested_by="").update(segment_requested_by=who):
        session_event_append(session, "segment.requested", {"by": who})
    session_wake(session, person=True)


def active_sessions(room: Room):
    return Session.objects.filter(task__room=room).filter(~Q(state__in=states.TERMINAL))
