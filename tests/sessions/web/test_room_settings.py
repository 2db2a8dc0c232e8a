"""The room's settings panel: check command and approval rules, owners only, with a
preview of what a sample call would get."""

from __future__ import annotations

import pytest
from django.urls import reverse

from rooms.errors import RoomError, RoomPermissionError
from rooms.models import Message
from rooms.services import room_settings_update
from sessions.approval_rules import room_rules
from sessions.models import ApprovalRule
from sessions.runtime.approvals import Rule
from sessions.runtime.rule_preview import preview
from sessions.services.approvals import approval_rule_create, approval_rule_delete
from tests.sessions.web.conftest import HTMX


def test_only_an_owner_changes_the_check_command_and_the_room_hears_of_it(room, owner, member, viewer):
    for person in (member, viewer):
        with pytest.raises(RoomPermissionError, match="Only the room's owners"):
            room_settings_update(room=room, actor=person, check_command="rm -rf /")
    room = room_settings_update(room=room, actor=owner, check_command="  python -m pytest -q  ")
    assert room.check_command == "python -m pytest -q"
    assert Message.objects.filter(room=room, kind="system").last().text == \
        "olga set the check command to `python -m pytest -q`."
    with pytest.raises(RoomError, match="NUL"):
        room_settings_update(room=room, actor=owner, check_command="pytest\x00")


def test_only_an_owner_adds_and_removes_rules_and_bad_rules_say_why(room, owner, member):
    with pytest.raises(RoomPermissionError):
        approval_rule_create(room=room, actor=member, tool="shell", command_prefix="make", decision="allow")
    rule = approval_rule_create(room=room, actor=owner, tool="shell", command_prefix="  make   test ", decision="allow")
    assert (rule.tool, rule.command_prefix, rule.created_by) == ("shell", "make test", owner)
    assert room_rules(room.pk) == [Rule("allow", "shell", "", "make test")]
    for bad, message in [
        ({"tool": "rm", "decision": "allow"}, "There is no tool 'rm'"),
        ({"tool": "shell", "decision": "sometimes"}, "Decide allow, ask or deny."),
        ({"tool": "shell", "path_glob": "src/*", "decision": "deny"}, "works on no path"),
        ({"tool": "write_file", "command_prefix": "make", "decision": "deny"}, "only applies to shell"),
    ]:
        with pytest.raises(RoomError, match=message):
            approval_rule_create(room=room, actor=owner, **bad)
    with pytest.raises(RoomPermissionError):
        approval_rule_delete(room=room, actor=member, rule_id=rule.pk)
    approval_rule_delete(room=room, actor=owner, rule_id=rule.pk)
    assert not ApprovalRule.objects.filter(room=room).exists()
    with pytest.raises(RoomError, match="not in this room"):
        approval_rule_delete(room=room, actor=owner, rule_id=rule.pk)


def test_the_preview_says_what_a_sample_call_gets_and_why():
    rules = [Rule("allow", "shell", command_prefix="python -m pytest"), Rule("deny", "shell", command_prefix="rm"),
             Rule("allow", "edit_file", path_glob="src/**"), Rule("deny", "edit_file", path_glob="src/vendor/**")]
    # With a deny rule set, a test run asks: the agent may have written anything into the tests.
    launcher = preview("shell", "python -m pytest -q", rules)
    assert launcher.decision == "ask" and "files of the worktree" in launcher.why
    assert preview("shell", "python -m pytest -q", rules[:1]).decision == "allow"
    strict = preview("shell", "python -m pytest -q && rm -rf build", rules)
    assert strict.decision == "deny" and "rm" in strict.why
    assert preview("shell", "touch build.log", rules).decision == "ask"
    assert "rooms are read-only by default" in preview("shell", "touch build.log", rules).why
    vendored = preview("edit_file", "src/app/../vendor/lib.py", rules)
    assert vendored.decision == "deny" and "the strictest wins" in vendored.why
    assert preview("edit_file", "src/app.py", rules).decision == "allow"
    assert preview("read_file", "anything.txt", rules).decision == "allow"
    assert preview("edit_file", "../outside.py", rules).decision == "deny"


def test_the_panel_shows_forms_to_owners_and_the_values_to_everyone_else(login, room, owner, member, stranger):
    room_settings_update(room=room, actor=owner, check_command="make check")
    url = reverse("sessions:room_settings", args=[room.slug])
    owner_html = login(owner).get(url, **HTMX).content.decode()
    assert 'id="room-settings-form"' in owner_html and 'id="rule-create"' in owner_html
    member_html = login(member).get(url, **HTMX).content.decode()
    assert "<code>make check</code>" in member_html and 'id="rule-create"' not in member_html
    assert 'id="rule-preview-form"' in member_html
    assert login(stranger).get(url, **HTMX).status_code == 404
    assert login(member).post(url, {"check_command": "true"}, **HTMX).status_code == 403
    room.refresh_from_db()
    assert room.check_command == "make check"


def test_an_owner_edits_on_the_panel_and_gets_it_back(login, room, owner):
    client = login(owner)
    html = client.post(reverse("sessions:room_settings", args=[room.slug]), {"check_command": "pytest -q"},
                       **HTMX).content.decode()
    assert "Settings saved." in html and 'value="pytest -q"' in html
    html = client.post(reverse("sessions:rule_create", args=[room.slug]),
                       {"tool": "shell", "command_prefix": "pytest", "decision": "allow"}, **HTMX).content.decode()
    rule = ApprovalRule.objects.get(room=room)
    assert f'id="rule-{rule.pk}"' in html and "commands starting with <code>pytest</code>" in html
    html = client.post(reverse("sessions:rule_create", args=[room.slug]),
                       {"tool": "shell", "path_glob": "x", "decision": "allow"}, **HTMX).content.decode()
    assert "works on no path" in html
    html = client.get(reverse("sessions:rule_preview", args=[room.slug]), {"tool": "shell", "sample": "pytest -x"},
                      **HTMX).content.decode()
    assert 'data-decision="allow"' in html and "matches allow <code>shell</code> commands starting with <code>pytest</code>" in html
    html = client.post(reverse("sessions:rule_delete", args=[room.slug, rule.pk]), **HTMX).content.decode()
    assert "Rule removed." in html and not ApprovalRule.objects.filter(room=room).exists()
