"""Review before merge, in the database: the room's reviewer, review rounds, verdicts and
people's overrides. The decisions are sessions/runtime/reviews.py's and the loop's; these
persist them and wake whichever session waits.

An author session opens a round in the transaction that parks it (``review_open``), so
a verdict can never arrive before the author waits for it; the verdict (the reviewer's,
``review_agent_decide``, or a person's, ``review_override``) is a compare-and-swap on
the pending round, so the reviewer and a person racing get one decision.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from agents.models import AgentProfile
from rooms.checks import check_message_text
from rooms.errors import RoomError
from rooms.models import Message, Room, RoomAgent
from rooms.own_key import may_spend_here
from rooms.selectors import check_may_act_in
from rooms.services import message_post
from sessions.events import session_event_append
from sessions.models import Review, Session
from sessions.runtime import reviews, states
from sessions.services.approvals import _check_can_configure
from sessions.services.lifecycle import REQUEUE_AFTER, enqueue_session, session_wake

ENDED = states.TERMINAL | {states.NEEDS_MERGE}


# --- the room's reviewer ------------------------------------------------------------------


def room_reviewer(room_id: int) -> AgentProfile | None:
    """The room's reviewer agent, or None: review is off."""
    row = RoomAgent.objects.filter(room_id=room_id, reviewer=True).select_related("agent").first()
    return row.agent if row else None


def reviewer_who_may_run(room_id: int) -> AgentProfile | None:
    """The room's reviewer if it may run here. One that spends its creator's account where
    they may no longer (rooms.own_key) leaves each round to people: never unreviewed."""
    reviewer = room_reviewer(room_id)
    return reviewer if reviewer is not None and may_spend_here(reviewer, room_id) else None


@transaction.atomic
def room_reviewer_set(*, room: Room, actor: AbstractBaseUser, agent_id: int | None) -> AgentProfile | None:
    """An owner names the room's reviewer (one of its agents), or turns review off
    (None). Sessions that finish from now on are reviewed; a round already open stays."""
    _check_can_configure(room, actor)
    chosen = None
    if agent_id is not None:
        chosen = RoomAgent.objects.select_related("agent").filter(room=room, agent_id=agent_id).first()
        if chosen is None:
            raise RoomError("That agent is not assigned to this room.", code="unknown_agent")
    before = room_reviewer(room.pk)
    if (before.pk if before else None) == agent_id:
        return before
    RoomAgent.objects.filter(room=room, reviewer=True).update(reviewer=False)
    who = actor.get_username()
    if chosen is None:
        message_post(room=room, author=actor, kind=Message.Kind.SYSTEM,
                     text=f"{who} turned review off: finished work merges after the check.")
        return None
    RoomAgent.objects.filter(pk=chosen.pk).update(reviewer=True)
    message_post(room=room, author=actor, kind=Message.Kind.SYSTEM,
                 text=f"{who} made {chosen.agent.name} the reviewer: finished work merges after its review.")
    return chosen.agent


# --- rounds -------------------------------------------------------------------------------


def review_open(*, session: Session, round_number: int, brief: str) -> Review:
    """Round ``round_number`` of ``session``'s work, with the reviewer's session: the one
    that reviewed the last round if it waits for the next, else a new one. Called in the
    author's unit transaction, with its row locked; a unit run again after a crash finds
    the round it opened."""
    review, created = Review.objects.get_or_create(session=session, round=round_number,
                                                   defaults={"brief": brief})
    if not created:
        return review
    reviewer = reviewer_who_may_run(session.task.room_id)
    if reviewer is None or reviewer.pk == session.agent_id:
        # Unassigned or unable to run meanwhile, or the reviewer's own work (it would
        # approve itself, in a second session at the task): people decide the round.
        return review
    last = (Review.objects.filter(session=session, reviewer_session__isnull=False).exclude(pk=review.pk)
            .select_related("reviewer_session", "reviewer_session__task").order_by("-round").first())
    reviewing = last.reviewer_session if last and last.reviewer_session.agent_id == reviewer.pk else None
    if reviewing is not None:
        # Locked: a reviewer parking right now either sees this round when it commits
        # (review_moved_on) or is parked by then and woken here.
        reviewing = Session.objects.select_for_update().select_related("task").get(pk=reviewing.pk)
    if reviewing is None or reviewing.state in ENDED:
        reviewing = _reviewer_session_start(author=session, reviewer=reviewer)
    else:
        session_wake(reviewing)
    Review.objects.filter(pk=review.pk).update(reviewer=reviewer, reviewer_session=reviewing)
    review.reviewer, review.reviewer_session = reviewer, reviewing
    return review


def _reviewer_session_start(*, author: Session, reviewer: AgentProfile) -> Session:
    task = author.task
    last = Session.objects.filter(task=task, agent=reviewer).aggregate(n=Max("attempt"))["n"] or 0
    session = Session.objects.create(
        task=task, agent=reviewer, model=reviewer.model, attempt=last + 1,
        time_limit_seconds=settings.ATRIUM_SESSION_TIME_LIMIT_SECONDS, wake_at=timezone.now() + REQUEUE_AFTER,
    )
    session_event_append(session, "session.state_changed", {"state": session.state, "attempt": session.attempt,
                                                            "review_of": author.pk})
    enqueue_session(session.pk)
    return session


def review_agent_decide(*, reviewer_session: Session, round_number: int, decision: str, reasons: str) -> bool:
    """The reviewer's verdict on its round (in the reviewer's unit transaction). False
    when the round was decided already (a person was quicker): that verdict stands."""
    review = Review.objects.select_related("session", "session__task").filter(
        reviewer_session=reviewer_session, round=round_number).first()
    if review is None or decision not in reviews.DECISIONS:
        return False
    state = reviews.verdict_state(decision)
    # The author's row first, as review_override takes them: the other order deadlocks.
    Session.objects.select_for_update().filter(pk=review.session_id).first()
    if not Review.objects.filter(pk=review.pk, state=Review.State.PENDING).update(
            state=state, reasons=reasons, decided_at=timezone.now()):
        return False
    _decided(review, state=state, reasons=reasons, by=reviewer_session.agent.name, person=False)
    return True


@transaction.atomic
def review_override(*, review: Review, actor: AbstractBaseUser, decision: str, reasons: str = "") -> Review:
    """A person decides a round instead of the reviewer: approve anyway, or request
    changes in their own words. A pending round, or (approve anyway) the last round's
    requested changes while the author still works: its next finish then merges."""
    author = Session.objects.select_for_update().select_related("task").get(pk=review.session_id)
    check_may_act_in(author.task.room, actor)
    if decision not in reviews.DECISIONS:
        raise RoomError("Decide approve or request_changes.", code="invalid")
    if decision == reviews.REQUEST_CHANGES:
        reasons = check_message_text(reasons)
    if author.state in ENDED:
        raise RoomError(f"This session has ended ({author.get_state_display().lower()}): there is no review "
                        "left to decide.", code="ended")
    allowed = [Review.State.PENDING]
    latest = Review.objects.filter(session=author).aggregate(n=Max("round"))["n"]
    if decision == reviews.APPROVE and review.round == latest:
        allowed.append(Review.State.CHANGES_REQUESTED)
    state = reviews.verdict_state(decision)
    if not Review.objects.filter(pk=review.pk, state__in=allowed).update(
            state=state, reasons=reasons, decided_by=actor, decided_at=timezone.now()):
        raise RoomError("This review round was already decided.", code="decided")
    review.refresh_from_db()
    _decided(review, state=state, reasons=reasons, by=actor.get_username(), person=True)
    if review.reviewer_session is not None:
        session_wake(review.reviewer_session)  # it ends if no round is left for it
    return review


def _decided(review: Review, *, state: str, reasons: str, by: str, person: bool) -> None:
    # Locked: an author parking right now either reads this verdict when it commits
    # (review_moved_on) or is parked by then and woken here.
    author = Session.objects.select_for_update().select_related("task").get(pk=review.session_id)
    session_event_append(author, "review.decided", {"round": review.round, "state": state, "by": by,
                                                    "person": person, "reasons": reasons[:4000]})
    session_wake(author, person=person)


# --- what the sessions read ---------------------------------------------------------------


def review_verdict(*, session: Session, round_number: int) -> reviews.Verdict | None:
    review = Review.objects.select_related("decided_by", "reviewer").filter(
        session=session, round=round_number).first()
    if review is None:
        return None
    person = review.decided_by is not None
    by = review.decided_by.get_username() if person else (review.reviewer.name if review.reviewer else "")
    return reviews.Verdict(round=review.round, state=review.state, reasons=review.reasons, by=by, by_person=person)


def next_review(*, reviewer_session: Session, after: int) -> reviews.NextRound:
    """For a reviewer between rounds: the next pending round given to it, or why none
    will come (the author ended, or a round approved its work)."""
    given = Review.objects.filter(reviewer_session=reviewer_session).select_related("session")
    pending = given.filter(round__gt=after, state=Review.State.PENDING).order_by("round").first()
    if pending is not None:
        return reviews.NextRound(round=pending.round, brief=pending.brief)
    last = given.order_by("-round").first()
    if last is None:
        return reviews.NextRound(over="no review round was given to this session")
    author = last.session
    author.refresh_from_db(fields=["state"])
    if author.state in ENDED:
        return reviews.NextRound(over=f"the author's session {author.pk} {author.state.replace('_', ' ')}")
    if Review.objects.filter(session=author, state=Review.State.APPROVED).exists():
        return reviews.NextRound(over="the work was approved")
    if Review.objects.filter(session=author, round__gt=last.round).exists():
        return reviews.NextRound(over="a new reviewer took the next round")
    return reviews.NextRound()


def review_moved_on(*, session: Session, reviewing: bool, round_number: int) -> bool:
    """Has what a session parking on a review waits for already happened? For an author,
    round ``round_number`` was decided; for a reviewer, a later round (or the end) came.
    Asked in the unit that parks it, under its row lock: the wake it would have had came
    while it was running and was lost."""
    if reviewing:
        found = next_review(reviewer_session=session, after=round_number)
        return bool(found.brief or found.over)
    return Review.objects.filter(session=session, round=round_number).exclude(state=Review.State.PENDING).exists()


def reviewed_session(session: Session) -> Session | None:
    """The author session ``session`` reviews, or None if it is no reviewer's."""
    review = Review.objects.filter(reviewer_session=session).select_related("session").order_by("round").first()
    return review.session if review else None


def session_reviews(session: Session) -> list[Review]:
    """Every round of ``session``'s work, newest first, for its page."""
    return list(Review.objects.filter(session=session).select_related("decided_by", "reviewer", "reviewer_session")
                .order_by("-round"))


def session_review(session: Session, review_id: int) -> Review:
    review = Review.objects.filter(session=session, pk=review_id).select_related("session").first()
    if review is None:
        raise RoomError("That review is not of this session.", code="not_found")
    return review
