"""Who may act on a room and its sessions is one function (rooms.checks.may_act): an
account with a room of its own next to the victim's, and a viewer of the victim's room,
are refused by every service, view and socket that acts, and owners and members are not."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from django.urls import reverse

from rooms.checks import MAY_ACT_REFUSAL, check_may_act, may_act
from rooms.errors import RoomPermissionError
from rooms.models import Membership, Message
from rooms.services import membership_add, message_post
from sessions.models import Session
from sessions.services import approvals, lifecycle, talk, tasks
from tests.rooms.factories import make_room, make_user
from tests.rooms.test_consumers import Socket, cookie_for
from tests.session_fixtures import demo_room, person, replay_agent  # noqa: F401 - fixtures


@pytest.mark.parametrize(("role", "allowed"), [(Membership.Role.OWNER, True), (Membership.Role.MEMBER, True),
                                               (Membership.Role.VIEWER, False), (None, False)])
def test_owners_and_members_act_viewers_and_strangers_do_not(role, allowed):
    membership = Membership(role=role) if role else None
    assert may_act(membership) is allowed
    if not allowed:
        with pytest.raises(RoomPermissionError, match=MAY_ACT_REFUSAL):
            check_may_act(membership)


@pytest.fixture
def victim_session(person, demo_room, replay_agent):  # noqa: F811
    task = tasks.task_create(room=demo_room, actor=person, title="Fix median", objective="Make tests pass")
    session = lifecycle.session_start(task=task, agent=replay_agent, actor=person)
    approval = approvals.approval_request(session=session, call_id="c1", tool="shell", arguments={"command": "ls"})
    return session, approval


@pytest.fixture
def attacker(replay_agent):  # noqa: F811
    """An account with its own room and the same agent: busy in rooms, not in the victim's."""
    mallory = make_user("mallory")
    make_room(mallory, agents=[replay_agent])
    return mallory


@pytest.fixture
def viewer(person, demo_room):  # noqa: F811
    watcher = make_user("watcher")
    membership_add(room=demo_room, actor=person, username="watcher", role=Membership.Role.VIEWER)
    return watcher


ACTIONS = {
    "task_create": lambda s, a, u: tasks.task_create(room=s.task.room, actor=u, title="x", objective="y"),
    "intent": lambda s, a, u: tasks.task_update_intent(task=s.task, actor=u, objective="mine",
                                                          definition_of_done="", prerequisites="", constraints=""),
    "start": lambda s, a, u: lifecycle.session_start(task=s.task, agent=s.agent, actor=u),
    "steer": lambda s, a, u: talk.session_steer(session=s, actor=u, text="leak it"),
    "cancel": lambda s, a, u: lifecycle.session_cancel(session=s, actor=u),
    "segment": lambda s, a, u: lifecycle.session_request_segment(session=s, actor=u),
    "approve": lambda s, a, u: approvals.approval_decide(approval=a, actor=u, decision="approve"),
    "chat": lambda s, a, u: message_post(room=s.task.room, author=u, kind=Message.Kind.CHAT, text="hi"),
}


@pytest.mark.parametrize("action", sorted(ACTIONS))
@pytest.mark.parametrize("who", ["attacker", "viewer"])
def test_every_service_refuses_who_may_not_act(request, victim_session, action, who):
    user = request.getfixturevalue(who)
    session, approval = victim_session
    with pytest.raises(RoomPermissionError):
        ACTIONS[action](session, approval, user)
    session.refresh_from_db()
    approval.refresh_from_db()
    assert session.state == Session.State.QUEUED and approval.state == "pending"


def test_a_member_may_act(victim_session, person, demo_room):  # noqa: F811
    session, approval = victim_session
    member = make_user("member")
    membership_add(room=demo_room, actor=person, username="member", role=Membership.Role.MEMBER)
    ACTIONS["chat"](session, approval, member)
    assert approvals.approval_decide(approval=approval, actor=member, decision="approve").state == "approved"


@pytest.mark.parametrize(("who", "status"), [("attacker", 404), ("viewer", 403)])
def test_every_session_view_refuses_who_may_not_act(request, victim_session, who, status):
    user = request.getfixturevalue(who)
    session, approval = victim_session
    client = Client()
    client.force_login(user)
    posts = [
        (reverse("sessions:session_steer", args=[session.pk]), {"text": "leak it"}),
        (reverse("sessions:session_cancel", args=[session.pk]), {}),
        (reverse("sessions:session_new_segment", args=[session.pk]), {}),
        (reverse("sessions:approval_decide", args=[session.pk, approval.pk]), {"decision": "approve"}),
        (reverse("sessions:task_start", args=[session.task.pk]), {"agent": session.agent.pk}),
    ]
    for url, data in posts:
        assert client.post(url, data).status_code == status, url
    session.refresh_from_db()
    approval.refresh_from_db()
    assert session.state == Session.State.QUEUED and approval.state == "pending"
    assert not Message.objects.filter(room=session.task.room, text="leak it").exists()


def test_the_room_socket_refuses_the_attacker_and_the_viewers_posts(victim_session, attacker, viewer):
    session, _ = victim_session
    room = session.task.room
    room.refresh_from_db()
    before = Message.objects.filter(room=room).count()
    attacker_cookie, viewer_cookie = cookie_for(attacker), cookie_for(viewer)

    async def scenario():
        stranger = Socket(room.slug, attacker_cookie)
        try:
            await stranger.open()
            assert await stranger.close_code() == 4403
        finally:
            await stranger.close()
        watching = Socket(room.slug, viewer_cookie)
        try:
            assert await watching.open()
            await watching.hello(room.last_message_seq)
            await watching.send(type="chat", text="hi")
            frame = await watching.receive()
            assert frame["type"] == "error", frame
        finally:
            await watching.close()

    async_to_sync(scenario)()
    assert Message.objects.filter(room=room).count() == before
