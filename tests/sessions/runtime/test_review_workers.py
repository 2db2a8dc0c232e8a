"""Review before merge on real workers, with replay agents: the reviewer requests changes,
the author addresses them, the reviewer approves, and only then does the work merge; a
person decides rounds instead of a reviewer that gives no verdict; with review off
nothing changes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from rooms.errors import RoomError, RoomPermissionError
from rooms.models import Membership, RoomAgent
from sessions.models import ApprovalRule, Review, Session, SessionEvent
from sessions.services.lifecycle import session_retry, session_start
from sessions.services.reviews import room_reviewer, room_reviewer_set
from sessions.services.tasks import task_create
from tests.sessions.runtime.test_workers import agent_in, ended, wait_for

FIRST = "def mean(xs):\n    return sum(xs) / len(xs)\n"
FIXED = "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n"
REVIEW_KINDS = ("verify", "review.requested", "review.decided", "review.returned", "merge")


def start_author(room, person):
    for tool in ("write_file", "shell"):
        ApprovalRule.objects.create(room=room, tool=tool, decision="allow")
    room.check_command = "python3 -m compileall -q ."
    room.save()
    author = agent_in(room, "author", "review-author.json")
    task = task_create(room=room, actor=person, title="Add mean", objective="Add stats.mean")
    return session_start(task=task, agent=author, actor=person)


def on_main(room) -> str | None:
    path = Path(room.repo_path) / "stats.py"
    return path.read_text() if path.exists() else None


def kinds(session) -> list[str]:
    return [k for k in SessionEvent.objects.filter(session=session).order_by("seq").values_list("kind", flat=True)
            if k in REVIEW_KINDS]


def test_the_reviewer_requests_changes_the_author_makes_them_and_only_the_approved_work_merges(
        hub_workers, person, demo_room):
    workers = [hub_workers(), hub_workers.beat()]
    critic = agent_in(demo_room, "critic", "review-critic.json")
    room_reviewer_set(room=demo_room, actor=person, agent_id=critic.pk)
    session = start_author(demo_room, person)
    main_before = subprocess.run(["git", "rev-parse", "HEAD"], cwd=demo_room.repo_path, capture_output=True,
                                 text=True).stdout
    merged_early = []

    def round_one_decided():
        return Review.objects.filter(session=session, round=1).exclude(state="pending").first()

    first = wait_for(round_one_decided, 120, "the first round's verdict", workers)
    assert first.state == "changes_requested" and "ZeroDivisionError" in first.reasons
    assert "if xs else 0.0" not in first.brief  # the first version was reviewed
    assert on_main(demo_room) is None  # nothing merged while the work was under review

    def author_ended():
        if on_main(demo_room) is not None and not Review.objects.filter(session=session, state="approved").exists():
            merged_early.append(on_main(demo_room))
        return ended(session)

    wait_for(author_ended, 120, "the author's session to end", workers)
    assert session.state == "succeeded", session.reason
    assert not merged_early, "main changed before the reviewer approved"
    assert not SessionEvent.objects.filter(session=session, kind="nudge").exists()
    assert on_main(demo_room) == FIXED  # what merged is the reviewed, fixed version
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=demo_room.repo_path, capture_output=True,
                          text=True).stdout != main_before

    rounds = list(Review.objects.filter(session=session).order_by("round"))
    assert [(r.round, r.state, r.decided_by_id) for r in rounds] == [(1, "changes_requested", None),
                                                                   (2, "approved", None)]
    assert "```diff" in rounds[0].brief and "stats.py" in rounds[0].brief and "check passed" in rounds[0].brief
    assert "+    return sum(xs) / len(xs)\n" in rounds[0].brief and "if xs else 0.0" not in rounds[0].brief
    assert "if xs else 0.0" in rounds[1].brief
    assert kinds(session) == ["verify", "review.requested", "review.decided", "review.returned",
                              "verify", "review.requested", "review.decided", "merge"]
    returned = SessionEvent.objects.get(session=session, kind="review.returned").payload
    assert returned["by"] == "critic" and not returned["person"] and "ZeroDivisionError" in returned["reasons"]

    # One reviewer session reviewed both rounds, read-only, in the author's worktree.
    reviewer = Session.objects.get(pk=rounds[0].reviewer_session_id)
    assert rounds[1].reviewer_session_id == reviewer.pk and reviewer.agent == critic
    assert reviewer.state == "succeeded" and reviewer.branch == ""
    tools = set(SessionEvent.objects.filter(session=reviewer, kind="tool.result").values_list("payload__tool",
                                                                                               flat=True))
    assert tools == {"read_file", "review"}

    client = Client()
    client.force_login(person)
    page = client.get(reverse("sessions:session", args=[session.pk])).content.decode()
    assert "Review before merge" in page and "review round 1: changes requested" in page
    assert "return 0.0 for an empty list" in page
    assert f"Reviews the work of <a href=\"{reverse('sessions:session', args=[session.pk])}\">author's session {session.pk}" in client.get(
        reverse("sessions:session", args=[reviewer.pk])).content.decode()


def test_a_person_decides_the_rounds_a_reviewer_left_without_a_verdict(hub_workers, person, demo_room):
    workers = [hub_workers(), hub_workers.beat()]
    mute = agent_in(demo_room, "mute", "review-silent.json")
    room_reviewer_set(room=demo_room, actor=person, agent_id=mute.pk)
    session = start_author(demo_room, person)
    client = Client()
    client.force_login(person)

    def pending(round_number):
        review = Review.objects.filter(session=session, round=round_number, state="pending").first()
        if review is None or review.reviewer_session is None:
            return None
        return review if ended(review.reviewer_session) else None

    first = wait_for(lambda: pending(1), 120, "round 1 left pending by its reviewer", workers)
    assert first.reviewer_session.state == "failed" and "without a verdict" in first.reviewer_session.reason
    assert on_main(demo_room) is None
    page = client.get(reverse("sessions:session", args=[session.pk])).content.decode()
    assert "Approve anyway" in page and "Request changes" in page
    # The failed reviewer is not retried as a worker on the task: people decide its round.
    with pytest.raises(RoomError, match="reviewer's session is not retried"):
        session_retry(session=first.reviewer_session, actor=person)
    assert "Retry (attempt" not in client.get(reverse("sessions:session", args=[first.reviewer_session_id])).content.decode()

    # A viewer may look, not decide.
    viewer = get_user_model().objects.create_user("vic", password="pw-vic-12345")
    Membership.objects.create(room=demo_room, user=viewer, role=Membership.Role.VIEWER)
    looker = Client()
    looker.force_login(viewer)
    url = reverse("sessions:review_override", args=[session.pk, first.pk])
    assert looker.post(url, {"decision": "approve"}).status_code == 403
    assert Review.objects.get(pk=first.pk).state == "pending"

    response = client.post(url, {"decision": "request_changes", "reasons": "Handle the empty list: return 0.0."})
    assert response.status_code == 302
    second = wait_for(lambda: pending(2), 120, "round 2 after the person's request", workers)
    assert second.reviewer_session_id != first.reviewer_session_id  # a new reviewer session
    assert on_main(demo_room) is None
    assert any("Handle the empty list" in d["text"] for d in Session.objects.get(pk=session.pk).decisions)

    client.post(reverse("sessions:review_override", args=[session.pk, second.pk]), {"decision": "approve"})
    wait_for(lambda: ended(session), 120, "the author's session to end", workers)
    assert session.state == "succeeded", session.reason
    assert on_main(demo_room) == FIXED
    decided = [(r.round, r.state, r.decided_by_id) for r in Review.objects.filter(session=session).order_by("round")]
    assert decided == [(1, "changes_requested", person.pk), (2, "approved", person.pk)]
    returned = SessionEvent.objects.get(session=session, kind="review.returned").payload
    assert returned == {"round": 1, "by": "pat", "person": True, "reasons": "Handle the empty list: return 0.0."}
    assert kinds(session)[-1] == "merge"
    assert SessionEvent.objects.filter(session=session, kind="nudge").count() == 0


def test_with_review_off_the_work_merges_after_the_check_as_before(hub_workers, person, demo_room):
    worker = hub_workers()
    agent_in(demo_room, "bystander", "review-critic.json")  # assigned, but nobody named it reviewer
    session = start_author(demo_room, person)
    wait_for(lambda: ended(session), 120, "the session to end", [worker])
    assert session.state == "succeeded", session.reason
    assert on_main(demo_room) == FIRST
    assert not Review.objects.exists() and kinds(session) == ["verify", "merge"]
    assert Session.objects.filter(task=session.task).count() == 1


def test_only_an_owner_names_the_reviewer_and_one_reviewer_at_a_time(person, demo_room):
    first = agent_in(demo_room, "first", "review-critic.json")
    second = agent_in(demo_room, "second", "review-critic.json")
    member = get_user_model().objects.create_user("mel", password="pw-mel-12345")
    Membership.objects.create(room=demo_room, user=member, role=Membership.Role.MEMBER)
    try:
        room_reviewer_set(room=demo_room, actor=member, agent_id=first.pk)
    except RoomPermissionError:
        pass
    else:
        raise AssertionError("a member named the reviewer")
    assert room_reviewer(demo_room.pk) is None

    client = Client()
    client.force_login(person)
    url = reverse("sessions:reviewer_set", args=[demo_room.slug])
    client.post(url, {"agent": str(first.pk)})
    client.post(url, {"agent": str(second.pk)})
    assert room_reviewer(demo_room.pk) == second
    assert list(RoomAgent.objects.filter(room=demo_room, reviewer=True).values_list("agent", flat=True)) == [second.pk]
    panel = client.get(reverse("sessions:room_settings", args=[demo_room.slug])).content.decode()
    assert "Review before merge" in panel and "<strong>second</strong>" in panel
    assert 'id="reviewer-badge"' in client.get(reverse("room", args=[demo_room.slug])).content.decode()
    client.post(url, {"agent": ""})
    assert room_reviewer(demo_room.pk) is None
