"""Reads for tasks and sessions. ``access_session`` is the only way a view or consumer
loads a session for a user: it checks membership of the session's room."""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Exists, Min, OuterRef, Q
from django.http import Http404

from agents.models import AgentProfile
from observations.gateway.decisions import Decision, Decisions
from rooms.checks import may_act
from rooms.models import Membership, Room, RoomAgent
from rooms.selectors import RoomAccess, SubqueryCount, access_room_by_id
from sessions.ledger.state_store import session_gateway_state
from sessions.models import (
    AgentMention,
    Approval,
    ProviderCall,
    Review,
    Segment,
    Session,
    SessionEvent,
    Task,
)
from sessions.runtime import states
from sessions.runtime.file_changes import paths_changed
from sessions.runtime.mentions import MentionOutcome, mentioned, post_note
from sessions.runtime.write_watch import FILE_CHANGED

LOOP_SUSPECTED = "loop.suspected"


@dataclass(frozen=True)
class SessionAccess:
    session: Session
    room_access: RoomAccess

    @property
    def can_control(self) -> bool:
        """Steer, approve, cancel: rooms.checks.may_act."""
        return may_act(self.room_access.membership)


def access_session(user: AbstractBaseUser | AnonymousUser, session_id: int) -> SessionAccess:
    session = Session.objects.without_state().select_related("task", "task__room", "agent").filter(
        pk=session_id).first()
    if session is None:
        raise Http404("No such session.")
    return SessionAccess(session=session, room_access=access_room_by_id(user, session.task.room_id))


@dataclass(frozen=True)
class TaskAccess:
    task: Task
    room_access: RoomAccess

    @property
    def can_control(self) -> bool:
        """Edit the intent, start sessions: rooms.checks.may_act."""
        return may_act(self.room_access.membership)


def access_task(user: AbstractBaseUser | AnonymousUser, task_id: int) -> TaskAccess:
    task = Task.objects.select_related("room").filter(pk=task_id).first()
    if task is None:
        raise Http404("No such task.")
    return TaskAccess(task=task, room_access=access_room_by_id(user, task.room_id))


@dataclass(frozen=True)
class TaskWork:
    task: Task
    sessions: list[Session]  # newest first

    @property
    def active(self) -> bool:
        return any(s.state in states.ACTIVE for s in self.sessions)


def room_work(room: Room) -> list[TaskWork]:
    """The room's tasks, newest first, each with every attempt at it."""
    tasks = list(Task.objects.filter(room=room).select_related("created_by").order_by("-created_at", "-pk"))
    by_task: dict[int, list[Session]] = {task.pk: [] for task in tasks}
    sessions = (Session.objects.without_state().filter(task__room=room).select_related("agent", "gateway_conversation")
                .annotate(loop_suspected=Exists(SessionEvent.objects.filter(session=OuterRef("pk"),
                                                                            kind=LOOP_SUSPECTED)))
                .order_by("-created_at", "-pk"))
    for session in sessions:
        by_task[session.task_id].append(session)
    return [TaskWork(task=task, sessions=by_task[task.pk]) for task in tasks]


@dataclass(frozen=True)
class Gauge:
    """Where the next request stands against the budget, from the latest step.started."""

    step: int
    projection: int
    trigger: int
    ceiling: int
    window: int
    anchored: bool
    postponed: int
    note: str

    def percent(self, tokens: int) -> float:
        return round(min(100.0, 100.0 * tokens / self.window), 1) if self.window else 0.0

    @property
    def projection_percent(self) -> float:
        return self.percent(self.projection)

    @property
    def trigger_percent(self) -> float:
        return self.percent(self.trigger)

    @property
    def ceiling_percent(self) -> float:
        return self.percent(self.ceiling)

    @property
    def zone(self) -> str:
        """ok below the trigger, fold-due up to the ceiling, over beyond it."""
        if self.projection > self.ceiling:
            return "over"
        if self.projection > self.trigger:
            return "fold-due"
        return "ok"


def session_gauge(session: Session) -> Gauge | None:
    event = SessionEvent.objects.filter(session=session, kind="step.started").order_by("-seq").first()
    if event is None:
        return None
    p = event.payload
    return Gauge(step=int(p.get("step", 0)), projection=int(p.get("projection", 0)), trigger=int(p.get("trigger", 0)),
                 ceiling=int(p.get("ceiling", 0)), window=int(p.get("window", 0)), anchored=bool(p.get("anchored")),
                 postponed=int(p.get("postponed", 0) or 0), note=str(p.get("note") or ""))


def session_next_attempt(session: Session) -> Session | None:
    """The retry dispatched from ``session``, if any."""
    return Session.objects.without_state().filter(previous=session).select_related("agent").first()


def pending_approvals(session: Session) -> list[Approval]:
    return list(Approval.objects.filter(session=session, state=Approval.State.PENDING).order_by("created_at", "pk"))


def session_approval(session: Session, approval_id: int) -> Approval:
    approval = Approval.objects.select_related("session", "session__task").filter(
        pk=approval_id, session=session).first()
    if approval is None:
        raise Http404("No such approval in this session.")
    return approval


def session_events_after(session_id: int, after_seq: int, *, up_to_seq: int | None = None,
                         limit: int | None = None) -> list[SessionEvent]:
    """Events with ``after_seq < seq [<= up_to_seq]``, oldest first: what a client missed."""
    qs = SessionEvent.objects.filter(session_id=session_id, seq__gt=after_seq)
    if up_to_seq is not None:
        qs = qs.filter(seq__lte=up_to_seq)
    qs = qs.order_by("seq")
    return list(qs[:limit] if limit is not None else qs)


def session_events_tail(session: Session, limit: int) -> tuple[list[SessionEvent], int]:
    """The newest ``limit`` events, oldest first, and how many older ones were left out."""
    newest_first = list(SessionEvent.objects.filter(session=session).order_by("-seq")[:limit])
    left_out = newest_first[-1].seq - 1 if len(newest_first) == limit else 0
    return list(reversed(newest_first)), left_out


def session_decisions(session: Session) -> list[Decision]:
    """The session's decisions (the task's constraints, people's words), D1 first, as the
    gateway keeps them: what every handoff carries verbatim."""
    saved = Session.objects.filter(pk=session.pk).values_list("decisions", flat=True).first()
    return Decisions.from_json(saved or []).items


def session_segments(session: Session):
    """The session's resets, first to last, with their handoffs."""
    return list(Segment.objects.filter(session=session).order_by("number"))


def session_loop_alarms(session: Session) -> list[dict]:
    """What the loop alarm raised in this session (loop.suspected payloads), oldest first."""
    return [e.payload for e in SessionEvent.objects.filter(session=session, kind=LOOP_SUSPECTED).order_by("seq")]


def agent_sessions_for(user, agent: AgentProfile):
    """The agent's sessions in the rooms ``user`` belongs to (profiles are hub-wide, what
    they did in a room is that room's business)."""
    return Session.objects.filter(agent=agent, task__room__memberships__user=user).distinct()


def session_request_steps(session: Session) -> list[int]:
    """The step of every model request the session sent, in order."""
    return list(ProviderCall.objects.filter(session=session).order_by("id").values_list("step", flat=True))


# Sessions enough to know how long they run, the newest first.
LENGTH_SAMPLES = 500


LENGTHS_FRESH_FOR = 60.0  # seconds a process keeps what it read
_lengths_read: dict[tuple[int, str], tuple[float, list[int]]] = {}


def session_lengths(agent: AgentProfile, model: str) -> list[int]:
    """How many steps the agent's finished sessions on ``model`` took (newest first).
    Read once a minute per process, not on every step: it changes only when a session
    ends, and a fold's economics take the shape of hundreds of them."""
    read = _lengths_read.get((agent.pk, model))
    if read is not None and time.monotonic() - read[0] <= LENGTHS_FRESH_FOR:
        return read[1]
    ended = Session.objects.filter(agent=agent, model=model, state__in=states.TERMINAL | {states.NEEDS_MERGE}, step__gt=0)
    lengths = list(ended.order_by("-finished_at", "-pk").values_list("step", flat=True)[:LENGTH_SAMPLES])
    _lengths_read[(agent.pk, model)] = (time.monotonic(), lengths)
    return lengths


def session_lengths_forget() -> None:
    """Read the lengths again (the tests' database is emptied between them)."""
    _lengths_read.clear()


def session_files_touched(session: Session) -> list[str]:
    """The files the session changed: the hub's answer to "which files did you touch?",
    from its record of changes (``file.changed`` events: each write, by a tool or by a
    command, and the gateway endpoint's inferred ones); for a session from before that
    record was kept, from the gateway's file notes."""
    touched = sessions_files_touched([session.pk])
    if session.pk in touched:
        return touched[session.pk]
    files = session_gateway_state(session).get("files", ())
    return sorted(note["path"] for note in files if note.get("written"))


def sessions_files_touched(session_ids: list[int]) -> dict[int, list[str]]:
    """What each session changed so far, from its record of changes, in one query (the
    room's live sessions, for the team panel and room_status); a session with no
    record is not among the keys."""
    records: dict[int, list[dict]] = {}
    for session_id, payload in (SessionEvent.objects.filter(session_id__in=session_ids, kind=FILE_CHANGED)
                                .order_by("session_id", "seq").values_list("session_id", "payload")):
        records.setdefault(session_id, []).append(payload)
    return {pk: paths_changed(found) for pk, found in records.items()}


def room_open_tasks(room_id: int) -> list[Task]:
    """The room's tasks that no session has finished yet (none succeeded), oldest first."""
    # A reviewer's session "succeeds" with its verdict, whatever became of the work.
    reviewing = Review.objects.filter(reviewer_session=OuterRef("pk"))
    done = Session.objects.filter(task=OuterRef("pk"), state=states.SUCCEEDED).exclude(Exists(reviewing))
    return list(Task.objects.filter(room_id=room_id).exclude(Exists(done)).order_by("created_at", "pk"))


def room_live_sessions(room_id: int, *, besides: int) -> list[Session]:
    """The room's sessions that are not over (needs_merge included), but ``besides``, oldest first."""
    return list(Session.objects.without_state().filter(task__room_id=room_id).exclude(pk=besides)
                .exclude(state__in=states.TERMINAL).select_related("agent", "task").order_by("created_at", "pk"))


def agent_mention_history(*, sender_id: int, session: Session, since) -> tuple[list[float], int, bool]:
    """What the mention guard weighs for a post of ``sender_id`` that names ``session``'s
    agent: when the sender's posts that reached that agent since ``since`` were made
    (epoch seconds, one per post), how many agents' mentions ``session`` took, and
    whether a stop of this sender towards ``session`` was posted since ``since``."""
    pair = (AgentMention.objects.filter(sender_id=sender_id, session__agent_id=session.agent_id,
                                        created_at__gte=since)
            .exclude(state=AgentMention.State.STOPPED).values("message_id").annotate(at=Min("created_at")))
    taken = AgentMention.objects.filter(session=session).exclude(state=AgentMention.State.STOPPED).count()
    stopped = AgentMention.objects.filter(sender_id=sender_id, session=session, state=AgentMention.State.STOPPED,
                                          created_at__gte=since).exists()
    return [row["at"].timestamp() for row in pair], taken, stopped


def agent_post_note(*, message) -> str:
    """What an agent's post came to, for the agent: which sessions its mentions reach,
    which the guard stopped, which names have no session here or are people."""
    rows = AgentMention.objects.filter(message_id=message.pk).select_related("session__agent").order_by("pk")
    outcomes = [MentionOutcome(r.session.agent.name, r.session_id, r.state != AgentMention.State.STOPPED, r.reason)
                for r in rows]
    reached = {o.agent for o in outcomes}
    agents = RoomAgent.objects.filter(room_id=message.room_id).exclude(agent_id=message.agent_id)
    names = [name for name in agents.values_list("agent__name", flat=True) if name not in reached]
    people = Membership.objects.filter(room_id=message.room_id).values_list("user__username", flat=True)
    return post_note(outcomes=outcomes, idle_agents=mentioned(message.text, names),
                     people=mentioned(message.text, people))


def room_list_counts(room_pk: OuterRef) -> dict:
    """What the room list shows of each room's agents and sessions (rooms.selectors.
    rooms_for_user asks through rooms.signals.room_list_annotations): ``agent_count``
    and the session counts behind the status badges: ``sessions_queued``,
    ``sessions_running``, ``sessions_waiting`` (parked on a job or timer),
    ``sessions_awaiting_approval`` (needs a person's decision), ``sessions_needs_merge``
    (finished, but its branch did not merge cleanly: needs a person too) and
    ``sessions_loop_suspected`` (unfinished, and the loop alarm went off)."""
    sessions = Session.objects.filter(task__room=room_pk)
    return {
        "agent_count": SubqueryCount(RoomAgent.objects.filter(room=room_pk)),
        "sessions_queued": SubqueryCount(sessions.filter(state=Session.State.QUEUED)),
        "sessions_running": SubqueryCount(sessions.filter(state=Session.State.RUNNING)),
        "sessions_waiting": SubqueryCount(sessions.filter(state=Session.State.WAITING)),
        "sessions_awaiting_approval": SubqueryCount(sessions.filter(state=Session.State.AWAITING_APPROVAL)),
        "sessions_needs_merge": SubqueryCount(sessions.filter(state=Session.State.NEEDS_MERGE)),
        "sessions_loop_suspected": SubqueryCount(sessions.filter(
            ~Q(state__in=states.TERMINAL),
            Exists(SessionEvent.objects.filter(session=OuterRef("pk"), kind="loop.suspected")),
        )),
    }
