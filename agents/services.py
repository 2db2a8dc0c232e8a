"""Writes for tasks, sessions, steers and approvals. Views, consumers, admin actions
and Celery tasks call these; each is one transaction, and its side effects (task
enqueues, broadcasts) leave the process only after commit."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Exists, Max, OuterRef, Q
from django.utils import timezone

from agents.disk_space import low_disk
from agents.dispatch import jobs_stop_on_commit, not_held, turn_send_on_commit
from agents.events import session_event_append
from agents.models import (
    AgentMention,
    AgentProfile,
    Approval,
    ApprovalRule,
    EvictionPolicy,
    ProviderCall,
    Review,
    RoomAgent,
    Session,
    Task,
)
from agents.own_key import check_may_spend_here
from agents.providers import CallRecord
from agents.rules import rule_checked, rule_describe
from agents.runtime import states
from agents.runtime.doorbell import ring_on_commit
from agents.runtime.mentions import MentionRules, judge_agent_mention, mentions
from agents.selectors import agent_mention_history, session_decisions
from observations.blobs import blob_put
from observations.gateway.context import SessionContext
from observations.gateway.messages import Usage
from observations.services import observations_sync
from rooms.checks import check_can_assign_agents, check_can_configure, check_is_staff, check_may_act
from rooms.errors import RoomError, RoomPermissionError
from rooms.models import Message, Room
from rooms.repository.beneath import PathRefused
from rooms.repository.intent import intent_write, render_intent
from rooms.repository.lock import task_intent_lock
from rooms.selectors import membership_of
from rooms.services import message_post

TITLE_MAX = 200
# A queued session's wake_at: workers take queued sessions in its order (after those
# people wait for; agents.dispatch), so it is the session's place in the queue.
REQUEUE_AFTER = timedelta(seconds=60)


def _check_can_act(room: Room, user: AbstractBaseUser) -> None:
    check_may_act(membership_of(room, user))


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


# --- agent profiles -------------------------------------------------------------------------


def check_can_edit_profile(profile: AgentProfile, user: AbstractBaseUser) -> None:
    """A profile belongs to its creator; staff may manage all. Others may use it in their
    rooms, but not change where it sends a room's work, nor its key."""
    if getattr(user, "is_staff", False):
        return
    if profile.created_by_id is None or profile.created_by_id != user.pk:
        raise RoomPermissionError(f"Only the person who created {profile.name} (or staff) can change it; "
                                  "you can still use it in your rooms.")


@transaction.atomic
def agent_profile_save(*, profile: AgentProfile, actor: AbstractBaseUser) -> AgentProfile:
    """Create ``profile`` (``actor`` becomes its owner) or save changes to it.

    Ownership is judged on the stored row, under its lock, not on the edited copy: a
    form cannot hand a profile to its editor.
    """
    if profile.pk is None:
        if profile.created_by_id is None or not getattr(actor, "is_staff", False):
            profile.created_by = actor
    else:
        stored = AgentProfile.objects.select_for_update().get(pk=profile.pk)
        check_can_edit_profile(stored, actor)
        if not getattr(actor, "is_staff", False):
            profile.created_by_id = stored.created_by_id
    profile.full_clean()
    profile.save()
    return profile


# --- tasks --------------------------------------------------------------------------------


def task_create(*, room: Room, actor: AbstractBaseUser, title: str, objective: str,
                definition_of_done: str = "", prerequisites: str = "", constraints: str = "") -> Task:
    """Create a task and commit its intent file to the room repository.

    Git runs after the row is committed, outside any transaction: a commit waits for the
    room's repository lock, which must never be held while row locks are (the intent's
    path needs the task's id, so the row comes first). If git fails the row is deleted
    again, so a failure leaves neither a task without intent nor an intent without task.
    """
    title, objective = title.strip(), objective.strip()
    if not title or not objective:
        raise RoomError("A task needs a title and an objective.", code="invalid")
    if len(title) > TITLE_MAX:
        raise RoomError(f"Keep the title under {TITLE_MAX} characters.", code="invalid")
    with transaction.atomic(durable=True):
        _check_can_act(room, actor)
        task = Task.objects.create(room=room, title=title, objective=objective,
                                   definition_of_done=definition_of_done, prerequisites=prerequisites,
                                   constraints=constraints, created_by=actor)
    try:
        task_write_intent(task=task, author=actor.get_username())
    except BaseException:
        # Nobody has the task yet (it was not returned), so nothing started on it.
        Task.objects.filter(pk=task.pk).delete()
        raise
    return task


def task_write_intent(*, task: Task, author: str = "") -> bool:
    """Commit ``task``'s intent file (git, under the room's repository lock): call it
    with no transaction open."""
    text = render_intent(task_id=task.pk, title=task.title, objective=task.objective,
                         prerequisites=task.prerequisites, definition_of_done=task.definition_of_done,
                         constraints=task.constraints)
    try:
        return intent_write(repo_path=task.room.repo_path, task_id=task.pk, text=text, author=author)
    except PathRefused as exc:
        raise RoomError(f"The intent file cannot be written: {exc}.", code="repo") from None


def task_update_intent(*, task: Task, actor: AbstractBaseUser, objective: str, definition_of_done: str,
                       prerequisites: str, constraints: str) -> bool:
    """A person edits the intent mid-flight; running sessions see it at their next boundary.

    The intent file is what sessions read, so it is committed first, with no transaction
    open (git leaves the file as it was when it fails: nothing changed anywhere); the
    row follows. Should the row's update then fail, the previous intent is committed
    back, so the file and the row never disagree.
    """
    _check_can_act(task.room, actor)
    if not objective.strip():
        raise RoomError("The objective cannot be empty.", code="invalid")
    # Two edits at once would otherwise interleave: file A, file B, row B, row A.
    with task_intent_lock(task.room.repo_path, task.pk):
        return _task_update_intent(task=task, actor=actor, objective=objective,
                                   definition_of_done=definition_of_done, prerequisites=prerequisites,
                                   constraints=constraints)


def _task_update_intent(*, task: Task, actor: AbstractBaseUser, objective: str, definition_of_done: str,
                        prerequisites: str, constraints: str) -> bool:
    fields = ["objective", "definition_of_done", "prerequisites", "constraints"]
    before = {name: getattr(task, name) for name in fields}
    task.objective, task.definition_of_done = objective.strip(), definition_of_done
    task.prerequisites, task.constraints = prerequisites, constraints
    try:
        changed = task_write_intent(task=task, author=actor.get_username())
    except BaseException:
        for name, value in before.items():
            setattr(task, name, value)
        raise
    try:
        with transaction.atomic(durable=True):
            task.save(update_fields=fields)
    except BaseException:
        for name, value in before.items():
            setattr(task, name, value)
        if changed:
            task_write_intent(task=task, author=actor.get_username())
        raise
    return changed


# --- sessions -----------------------------------------------------------------------------


@transaction.atomic
def session_start(*, task: Task, agent: AgentProfile, actor: AbstractBaseUser | None,
                  previous: Session | None = None, dispatched_by: AbstractBaseUser | None = None) -> Session:
    """A new attempt of ``agent`` at ``task``, queued for a worker once committed.

    ``actor`` is a room member acting in the room; ``dispatched_by`` is staff acting
    from the admin (no membership needed), recorded as the creator.
    """
    if actor is not None:
        _check_can_act(task.room, actor)
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
        _check_can_act(session.task.room, actor)
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
    and running slices yield to it (agents.dispatch). The first wait's time is kept."""
    now = timezone.now()
    # Only the hub's own sessions wait for a worker; one driven through the gateway
    # endpoint is also row-locked for as long as its client's request runs upstream.
    return bool(Session.objects.filter(not_held(now), pk=session.pk, attention_at__isnull=True,
                                       origin=Session.Origin.HUB).exclude(
        state__in=states.TERMINAL | {states.NEEDS_MERGE}).update(attention_at=now))


@transaction.atomic
def session_steer(*, session: Session, actor: AbstractBaseUser, text: str, replaces: tuple[int, ...] = ()) -> Message:
    """Steer one session: stored and shown now, delivered at its next step boundary.
    ``replaces``: decisions of the session (D<n>) this steer takes the place of."""
    if session.state in states.TERMINAL:
        raise RoomError("This session has ended; steer a running one or start a retry.", code="ended")
    decisions = {d.number: d for d in session_decisions(session)}
    if constraints := sorted(n for n in replaces if n in decisions and decisions[n].kind == "constraint"):
        raise RoomError(f"{', '.join(f'D{n}' for n in constraints)} is a constraint of the task: change it by "
                        "editing the task's intent, which the agent re-reads and which wins.", code="invalid")
    unknown = sorted(n for n in set(replaces) if n not in decisions or not decisions[n].in_force)
    if unknown:
        raise RoomError(f"{', '.join(f'D{n}' for n in unknown)} is not a decision in force in this session.",
                        code="invalid")
    message = message_post(room=session.task.room, author=actor, kind=Message.Kind.STEER, text=text,
                           agent=session.agent, session=session, replaces=tuple(sorted(set(replaces))))
    session_wake(session, person=True)
    return message


@transaction.atomic
def session_request_segment(*, session: Session, actor: AbstractBaseUser) -> None:
    """A person asks for a new segment: the next step boundary starts one (a handoff,
    then a fresh context). Repeated asks before it happens are one ask."""
    _check_can_act(session.task.room, actor)
    if session.state in states.TERMINAL:
        raise RoomError("This session has ended; a new segment only helps a running one.", code="ended")
    if session.agent.eviction_policy != EvictionPolicy.ON_DEMAND:
        raise RoomError(f"This agent's eviction policy ({session.agent.eviction_policy}) keeps no segments: only "
                        "on demand starts new ones.", code="invalid")
    who = actor.get_username()
    if Session.objects.filter(pk=session.pk, segment_requested_by="").update(segment_requested_by=who):
        session_event_append(session, "segment.requested", {"by": who})
    session_wake(session, person=True)


def sessions_wake_reached(*, message: Message) -> None:
    """A person's post wakes every session it reaches, in the post's transaction
    (rooms.signals.message_posted): a steer to an agent, its sessions in the room; a
    chat, the sessions of each agent it mentions. The queue messages leave after commit,
    so a worker never looks before the message is there. A steer to one session
    (``session_steer``) wakes that session itself."""
    room = message.room
    if message.kind == Message.Kind.STEER and message.session_id is None and message.agent is not None:
        steers_wake_sessions(room=room, agent=message.agent)
    elif message.kind == Message.Kind.CHAT:
        for mentioned in RoomAgent.objects.filter(room=room).select_related("agent"):
            if mentions(message.text, mentioned.agent.name):
                steers_wake_sessions(room=room, agent=mentioned.agent)
    elif message.kind == Message.Kind.AGENT and message.agent is not None:
        agent_mentions_route(message=message)


def agent_mentions_route(*, message: Message) -> None:
    """An agent's post that names other agents of the room: each of their live sessions
    there gets it at its next step boundary (woken if parked), unless the mention guard
    (agents.runtime.mentions.judge_agent_mention) stops it; a stop is logged on the
    session and posted to the room for people. In the post's transaction, which holds
    the room row (its seq), so two posts of the room are judged one after the other."""
    room, sender = message.room, message.agent
    rules = MentionRules(**settings.ATRIUM_AGENT_MENTIONS)
    now = timezone.now()
    since = now - timedelta(seconds=rules.window_seconds)
    for room_agent in RoomAgent.objects.filter(room=room).exclude(agent=sender).select_related("agent"):
        receiver = room_agent.agent
        if not mentions(message.text, receiver.name):
            continue
        # A reviewer works from the diff, the check and the intent: the session under its
        # review does not get to talk to it.
        reviewing_sender = Review.objects.filter(reviewer_session=OuterRef("pk"), session_id=message.session_id)
        sessions = list(Session.objects.without_state().filter(task__room=room, agent=receiver).exclude(
            state__in=states.TERMINAL | {states.NEEDS_MERGE}).exclude(Exists(reviewing_sender))
            .select_related("task").order_by("pk"))
        # Judged before any row of this post exists: one post counts once for the pair.
        verdicts = []
        for session in sessions:
            pair_times, taken, stopped = agent_mention_history(sender_id=sender.pk, session=session, since=since)
            verdicts.append((session, judge_agent_mention(
                pair_times=pair_times, session_taken=taken, stopped_recently=stopped, now=now.timestamp(),
                rules=rules, sender=sender.name, receiver=receiver.name)))
        for session, verdict in verdicts:
            AgentMention.objects.create(
                message=message, sender=sender, sender_session_id=message.session_id, session=session,
                state=AgentMention.State.PENDING if verdict.deliver else AgentMention.State.STOPPED,
                reason=verdict.reason)
            if verdict.deliver:
                session_wake(session)
                ring_on_commit([session.pk])  # a running await returns to read it
                continue
            session_event_append(session, "mention.stopped", {
                "message_id": message.pk, "seq": message.seq, "from": sender.name, "reason": verdict.reason})
            if verdict.announce:
                message_post(room=room, author=None, kind=Message.Kind.SYSTEM, text=(
                    f"Mention loop stopped: {sender.name}'s message #{message.seq} was not delivered to "
                    f"{receiver.name} (session {session.pk}) because {verdict.reason}. Write to either agent "
                    "to go on."))


def agent_mentions_mark_delivered(*, session: Session, message_ids: tuple[int, ...]) -> int:
    """The session's boundary read these agents' posts (compare-and-swap: once)."""
    if not message_ids:
        return 0
    return AgentMention.objects.filter(session=session, message_id__in=message_ids,
                                       state=AgentMention.State.PENDING).update(
        state=AgentMention.State.DELIVERED, delivered_at=timezone.now())


def steers_wake_sessions(*, room: Room, agent: AgentProfile) -> None:
    """People wrote to ``agent`` in ``room`` (a steer, a mention): each of its sessions
    there that is not over is woken (parked) or moved to the front of the queue."""
    reached = Session.objects.without_state().filter(task__room=room, agent=agent).exclude(
        state__in=states.TERMINAL | {states.NEEDS_MERGE}).select_related("task")
    for session in reached:
        session_wake(session, person=True)


# --- a room's agents ----------------------------------------------------------------------


@transaction.atomic
def agent_assign(*, room: Room, actor: AbstractBaseUser, agent: AgentProfile) -> RoomAgent:
    check_can_assign_agents(membership_of(room, actor))
    check_may_spend_here(agent, room)
    if RoomAgent.objects.filter(room=room, agent=agent).exists():
        raise RoomError(f"{agent.name} is already assigned to this room.", code="exists")
    room_agent = RoomAgent.objects.create(room=room, agent=agent, added_by=actor)
    message_post(room=room, author=actor, kind=Message.Kind.SYSTEM, text=f"{actor.get_username()} assigned {agent.name}.")
    return room_agent


@transaction.atomic
def agent_unassign(*, room: Room, actor: AbstractBaseUser, agent_id: int) -> None:
    check_can_assign_agents(membership_of(room, actor))
    room_agent = RoomAgent.objects.select_related("agent").filter(room=room, agent_id=agent_id).first()
    if room_agent is None:
        raise RoomError("That agent is not assigned to this room.", code="unknown_agent")
    room_agent.delete()
    message_post(room=room, author=actor, kind=Message.Kind.SYSTEM,
                 text=f"{actor.get_username()} unassigned {room_agent.agent.name}.")


# --- a room's approval rules -------------------------------------------------------------


@transaction.atomic
def approval_rule_create(*, room: Room, actor: AbstractBaseUser, tool: str, path_glob: str = "",
                         command_prefix: str = "", decision: str) -> ApprovalRule:
    """An owner adds a rule; running sessions apply it from their next tool call."""
    _check_can_configure(room, actor)
    rule = rule_checked(tool=tool, path_glob=path_glob, command_prefix=command_prefix, decision=decision)
    created = ApprovalRule.objects.create(room=room, created_by=actor, **rule)
    message_post(room=room, author=actor, kind=Message.Kind.SYSTEM,
                 text=f"{actor.get_username()} added an approval rule: {created.decision} {rule_describe(created)}.")
    return created


@transaction.atomic
def approval_rule_delete(*, room: Room, actor: AbstractBaseUser, rule_id: int) -> None:
    _check_can_configure(room, actor)
    rule = ApprovalRule.objects.filter(room=room, pk=rule_id).first()
    if rule is None:
        raise RoomError("That rule is not in this room (removed already?).", code="not_found")
    rule.delete()
    message_post(room=room, author=actor, kind=Message.Kind.SYSTEM,
                 text=f"{actor.get_username()} removed an approval rule: {rule.decision} {rule_describe(rule)}.")


def _check_can_configure(room: Room, user: AbstractBaseUser) -> None:
    membership = membership_of(room, user)
    if membership is None:
        raise RoomPermissionError("You are not a member of this room.")
    check_can_configure(membership)


# --- approvals ----------------------------------------------------------------------------


@transaction.atomic
def approval_request(*, session: Session, call_id: str, tool: str, arguments: dict) -> Approval:
    timeout = timedelta(seconds=settings.ATRIUM_APPROVAL_TIMEOUT_SECONDS)
    approval, created = Approval.objects.get_or_create(
        session=session, call_id=call_id,
        defaults={"tool": tool, "arguments": arguments, "expires_at": timezone.now() + timeout},
    )
    if created:
        session_event_append(session, "approval.requested", {
            "approval": approval.pk, "call_id": call_id, "tool": tool, "arguments": arguments,
            "expires_at": approval.expires_at.isoformat(),
        })
    return approval


@transaction.atomic
def approval_decide(*, approval: Approval, actor: AbstractBaseUser, decision: str, as_staff: bool = False) -> Approval:
    """approve / deny / always (approve, and the same kind of call for the rest of the
    session: see agents.runtime.approvals.always_rule).

    Compare-and-swap on the pending state: a second click, or a decision racing the
    timeout, changes nothing. The decision is the only path to execution. ``as_staff``:
    ``actor`` decides from the admin, as staff, without being a member of the room.
    """
    if decision not in {"approve", "deny", "always"}:
        raise RoomError("Decide approve, deny or always.", code="invalid")
    session = approval.session
    if as_staff:
        check_is_staff(actor)
    else:
        _check_can_act(session.task.room, actor)
    session.refresh_from_db(fields=["state"])
    if session.state in states.TERMINAL:
        raise RoomError(f"This session has ended ({session.get_state_display().lower()}): there is nothing left "
                        "to approve.", code="ended")
    state = Approval.State.DENIED if decision == "deny" else Approval.State.APPROVED
    updated = Approval.objects.filter(pk=approval.pk, state=Approval.State.PENDING).update(
        state=state, always=decision == "always", decided_by=actor, decided_at=timezone.now()
    )
    if updated != 1:
        raise RoomError("This call was already decided.", code="decided")
    approval.refresh_from_db()
    session_event_append(session, "approval.decided", {
        "approval": approval.pk, "call_id": approval.call_id, "state": state, "always": approval.always,
        "by": actor.get_username(),
    })
    session.refresh_from_db(fields=["state"])
    session_wake(session, person=True)
    return approval


@transaction.atomic
def approvals_expire(now=None) -> int:
    """Deny every request nobody answered in time, and wake their sessions."""
    now = now or timezone.now()
    expired = 0
    # Beat's sweep calls this every few seconds: the sessions' JSON state stays unread.
    for approval in Approval.objects.select_related("session", "session__task").filter(
        state=Approval.State.PENDING, expires_at__lte=now
    ).defer("session__gateway_state", "session__runtime_state", "session__analysis"):
        if Approval.objects.filter(pk=approval.pk, state=Approval.State.PENDING).update(
            state=Approval.State.EXPIRED, decided_at=now
        ):
            expired += 1
            session_event_append(approval.session, "approval.decided", {
                "approval": approval.pk, "call_id": approval.call_id, "state": "expired", "by": "",
            })
            session_wake(approval.session)
    return expired


def active_sessions(room: Room):
    return Session.objects.filter(task__room=room).filter(~Q(state__in=states.TERMINAL))


# --- accounting ---------------------------------------------------------------------------


def provider_call_record(*, session: Session, step: int, record: CallRecord) -> ProviderCall:
    """Store one model call as the provider reported it, priced at the agent's prices
    (called inside the step's transaction). A refused call (an error, no usage) is not
    billed; an answer without reported usage has an unknown cost, never a guessed one."""
    usage = Usage(input_tokens=record.input_tokens, cached_input_tokens=record.cached_input_tokens,
                  cache_write_tokens=record.cache_write_tokens, output_tokens=record.output_tokens,
                  reasoning_tokens=record.reasoning_tokens)
    if record.usage_reported:
        cost = session.agent.price_for(record.model).cost(usage)
    else:
        cost = Decimal(0) if record.error else None
    return ProviderCall.objects.create(
        session=session, step=step, model=record.model, input_tokens=record.input_tokens,
        cached_input_tokens=record.cached_input_tokens, cache_write_tokens=record.cache_write_tokens,
        output_tokens=record.output_tokens, reasoning_tokens=record.reasoning_tokens,
        latency_ms=record.latency_ms, prefix_hash=record.prefix_hash, projected_tokens=record.projected_tokens,
        prefix=record.prefix, cost_usd=cost, error=record.error or "", purpose=record.purpose,
        request_sha256=blob_put(record.request).sha256 if record.request else "",
    )


def unit_records_save(*, session: Session, ctx: SessionContext, touched, fields: list[str],
                      call_records: Iterable[CallRecord]) -> None:
    """What every unit of a session writes, a worker's or the gateway endpoint's (in its
    transaction): the step, the tokens and model calls, the session's ``fields``, and the
    observation rows of what the unit ``touched`` (a StateJournal record's)."""
    session.step = ctx.step
    for record in call_records:
        session.tokens_input += record.input_tokens
        session.tokens_cached += record.cached_input_tokens
        session.tokens_output += record.output_tokens
        provider_call_record(session=session, step=ctx.step, record=record)
    session.save(update_fields=fields)
    observations_sync(session=session, ctx=ctx, touched=touched)


def session_analysis_refresh(session: Session, *, loaded: bool = False) -> dict:
    """The session's stored trace analysis, recomputed first if its event log grew since
    (a derived cache: room and agent totals add these up instead of re-reading every log).
    ``loaded``: ``session`` was just read with its analysis columns, so they need not be
    read again (a room's totals read them for all its sessions in one query)."""
    from agents.analysis.selectors import session_facts
    from agents.analysis.trace import analyze

    if loaded:
        seq, stored, stored_seq = session.last_event_seq, session.analysis, session.analysis_seq
    else:
        seq, stored, stored_seq = Session.objects.values_list("last_event_seq", "analysis", "analysis_seq").get(
            pk=session.pk)
    if stored and stored_seq == seq:
        return stored
    data = analyze(session_facts(session)).to_dict()
    # Events appended meanwhile are in `data` too; labelled with the older seq, it is
    # simply recomputed next time.
    Session.objects.filter(pk=session.pk, analysis_seq__lte=seq).update(analysis=data, analysis_seq=seq)
    session.analysis, session.analysis_seq = data, seq
    return data


def sessions_analysis_totals(sessions) -> dict:
    """Totals of the trace analyses of ``sessions`` (a room's, an agent's)."""
    from agents.analysis.trace import add_up

    sessions = sessions.select_related("task", "task__room", "agent").defer(*Session.STATE_FIELDS)
    return add_up([session_analysis_refresh(s, loaded=True) for s in sessions])
