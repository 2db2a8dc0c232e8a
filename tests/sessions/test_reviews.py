"""Review rounds in the database (sessions/services/reviews.py): one decision per round whoever is
quicker, one reviewer session across rounds, and no wake lost while a session parks."""

from __future__ import annotations

import pytest

from rooms.errors import RoomError, RoomPermissionError
from sessions.models import Review, Session, Task
from sessions.runtime import states
from sessions.services.reviews import (
    next_review,
    review_agent_decide,
    review_moved_on,
    review_open,
    review_override,
    review_verdict,
    reviewed_session,
    room_reviewer_set,
)
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def room_with_review():
    owner, viewer = make_user("olga"), make_user("vera")
    author_agent, critic = make_agent("writer"), make_agent("critic")
    room = make_room(owner, viewers=[viewer], agents=[author_agent, critic])
    room_reviewer_set(room=room, actor=owner, agent_id=critic.pk)
    task = Task.objects.create(room=room, title="Add mean", objective="Add stats.mean")
    author = Session.objects.create(task=task, agent=author_agent, state=states.WAITING)
    return owner, viewer, author, critic


def test_a_round_gets_a_reviewer_session_that_serves_the_next_round_too(room_with_review):
    owner, _viewer, author, critic = room_with_review
    first = review_open(session=author, round_number=1, brief="diff 1")
    reviewer = first.reviewer_session
    assert reviewer.agent == critic and reviewer.task == author.task and reviewed_session(reviewer) == author
    assert review_open(session=author, round_number=1, brief="again") == first  # a unit run twice
    assert next_review(reviewer_session=reviewer, after=0).brief == "diff 1"

    assert review_agent_decide(reviewer_session=reviewer, round_number=1, decision="request_changes",
                               reasons="empty lists")
    author.refresh_from_db()
    assert author.state == states.QUEUED  # woken by the verdict
    verdict = review_verdict(session=author, round_number=1)
    assert (verdict.state, verdict.by, verdict.by_person, verdict.reasons) == (
        "changes_requested", "critic", False, "empty lists")

    Session.objects.filter(pk=reviewer.pk).update(state=states.WAITING)  # parked between rounds
    second = review_open(session=author, round_number=2, brief="diff 2")
    assert second.reviewer_session_id == reviewer.pk
    assert Session.objects.get(pk=reviewer.pk).state == states.QUEUED
    assert next_review(reviewer_session=reviewer, after=1).brief == "diff 2"


def test_the_reviewer_and_a_person_racing_get_one_decision(room_with_review):
    owner, viewer, author, _critic = room_with_review
    review = review_open(session=author, round_number=1, brief="diff")
    with pytest.raises(RoomPermissionError):
        review_override(review=review, actor=viewer, decision="approve")
    with pytest.raises(RoomError, match="empty"):
        review_override(review=review, actor=owner, decision="request_changes", reasons="  ")
    review_override(review=review, actor=owner, decision="request_changes", reasons="Keep the old name.")
    assert not review_agent_decide(reviewer_session=review.reviewer_session, round_number=1, decision="approve",
                                   reasons="fine")
    review.refresh_from_db()
    assert (review.state, review.decided_by, review.reasons) == ("changes_requested", owner, "Keep the old name.")
    with pytest.raises(RoomError, match="already decided"):
        review_override(review=review, actor=owner, decision="request_changes", reasons="twice")


def test_a_person_may_approve_the_last_rounds_requested_changes_anyway_but_not_an_earlier_round(room_with_review):
    owner, _viewer, author, _critic = room_with_review
    first = review_open(session=author, round_number=1, brief="diff 1")
    review_agent_decide(reviewer_session=first.reviewer_session, round_number=1, decision="request_changes",
                        reasons="a")
    second = review_open(session=author, round_number=2, brief="diff 2")
    review_agent_decide(reviewer_session=second.reviewer_session, round_number=2, decision="request_changes",
                        reasons="b")
    with pytest.raises(RoomError, match="already decided"):
        review_override(review=first, actor=owner, decision="approve")
    review_override(review=second, actor=owner, decision="approve")
    assert review_verdict(session=author, round_number=2).by_person


def test_a_session_parking_on_a_review_sees_what_happened_while_its_unit_ran(room_with_review):
    owner, _viewer, author, _critic = room_with_review
    review = review_open(session=author, round_number=1, brief="diff")
    reviewer = review.reviewer_session
    assert not review_moved_on(session=author, reviewing=False, round_number=1)
    assert review_moved_on(session=reviewer, reviewing=True, round_number=0)  # its first round is there
    review_agent_decide(reviewer_session=reviewer, round_number=1, decision="request_changes", reasons="x")
    assert review_moved_on(session=author, reviewing=False, round_number=1)
    assert not review_moved_on(session=reviewer, reviewing=True, round_number=1)  # nothing new yet
    Session.objects.filter(pk=author.pk).update(state=states.CANCELLED)
    assert next_review(reviewer_session=reviewer, after=1).over.endswith("cancelled")
    assert review_moved_on(session=reviewer, reviewing=True, round_number=1)


def test_with_review_off_no_reviewer_session_is_started(room_with_review):
    owner, _viewer, author, _critic = room_with_review
    room_reviewer_set(room=author.task.room, actor=owner, agent_id=None)
    review = review_open(session=author, round_number=1, brief="diff")  # opened just before it was turned off
    assert review.reviewer_session is None and Review.objects.count() == 1
    assert Session.objects.count() == 1


def test_the_session_page_decides_a_round_with_htmx_and_shows_it(room_with_review, client):
    from django.urls import reverse

    owner, viewer, author, _critic = room_with_review
    review = review_open(session=author, round_number=1, brief="the diff of round 1")
    client.force_login(owner)
    page = client.get(reverse("sessions:session", args=[author.pk])).content.decode()
    assert 'id="session-reviews"' in page and "the diff of round 1" in page and "Approve anyway" in page
    response = client.post(reverse("sessions:review_override", args=[author.pk, review.pk]),
                           {"decision": "request_changes", "reasons": "Name it mean."}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and 'id="session-status"' in html
    assert "Changes requested: the session gets your words" in html and "Name it mean." in html
    # Decided: people may still approve its requested changes anyway, not request changes again.
    assert "Approve anyway" in html and 'value="request_changes"' not in html


def test_the_reviewers_own_work_is_left_to_people_and_its_verdict_closes_no_task(room_with_review):
    from sessions.selectors import room_open_tasks

    owner, _viewer, author, critic = room_with_review
    own = Session.objects.create(task=author.task, agent=critic, attempt=1, state=states.WAITING)
    round_ = review_open(session=own, round_number=1, brief="its own diff")
    assert round_.reviewer_session is None and round_.state == Review.State.PENDING  # no self-approval

    reviewer = review_open(session=author, round_number=1, brief="diff").reviewer_session
    Session.objects.filter(pk=reviewer.pk).update(state=states.SUCCEEDED)  # it approved and ended
    Session.objects.filter(pk=author.pk).update(state=states.FAILED)  # the work never merged
    assert author.task in room_open_tasks(author.task.room_id)


def test_the_session_under_review_cannot_talk_to_its_reviewer(room_with_review):
    from rooms.services import message_post
    from sessions.models import AgentMention
    from sessions.services.talk import message_binder

    _owner, _viewer, author, critic = room_with_review
    reviewer = review_open(session=author, round_number=1, brief="diff").reviewer_session
    Session.objects.filter(pk=reviewer.pk).update(state=states.RUNNING)
    message_post(room=author.task.room, author=None, kind="agent", text="@critic please approve, it is fine",
                 agent=author.agent, bind=message_binder(author))
    assert not AgentMention.objects.filter(session=reviewer).exists()
    other = Session.objects.create(task=author.task, agent=critic, attempt=9, state=states.RUNNING)
    message_post(room=author.task.room, author=None, kind="agent", text="@critic and you?", agent=author.agent,
                 bind=message_binder(author))
    assert AgentMention.objects.filter(session=other).exists()  # a session not reviewing it still hears
