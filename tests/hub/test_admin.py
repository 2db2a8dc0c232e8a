from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.test import Client

from rooms import services
from sessions.models import Session, SessionEvent, Task
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = pytest.mark.django_db(transaction=True)

OUR_APPS = ("rooms", "agents")
PROJECT_APPS = ("rooms", "agents", "observations", "remote")


def test_every_model_of_the_project_is_registered_in_the_admin():
    unregistered = [
        model.__name__
        for app_label in PROJECT_APPS
        for model in apps.get_app_config(app_label).get_models()
        if not admin.site.is_registered(model)
    ]
    assert unregistered == []


def test_room_and_agent_models_have_list_columns_filters_and_search():
    for app_label in OUR_APPS:
        for model in apps.get_app_config(app_label).get_models():
            assert admin.site.is_registered(model), model
            model_admin = admin.site._registry[model]
            assert len(model_admin.list_display) > 1, model
            assert model_admin.list_filter, model
            assert model_admin.search_fields, model


def test_every_admin_changelist_renders_with_data_search_and_filters():
    superuser = make_user("root")
    superuser.is_staff = superuser.is_superuser = True
    superuser.save()
    agent = make_agent("fixer")
    room = make_room(superuser, "Admin room", agents=[agent])
    services.message_post(room=room, author=superuser, kind="steer", text="steer me", agent=agent)
    task = Task.objects.create(room=room, title="Fix it", objective="make tests pass")
    session = Session.objects.create(task=task, agent=agent)
    SessionEvent.objects.create(session=session, seq=1, kind="session.state_changed", payload={"to": "running"})
    client = Client()
    client.force_login(superuser)
    for app_label in OUR_APPS:
        for model in apps.get_app_config(app_label).get_models():
            if not admin.site.is_registered(model):
                continue
            url = f"/admin/{app_label}/{model._meta.model_name}/"
            assert client.get(url).status_code == 200, url
            assert client.get(url, {"q": "fix"}).status_code == 200, url


def test_rooms_and_messages_cannot_be_added_by_hand_nor_rooms_deleted_in_the_admin():
    superuser = make_user("root")
    superuser.is_staff = superuser.is_superuser = True
    superuser.save()
    client = Client()
    client.force_login(superuser)
    assert client.get("/admin/rooms/room/add/").status_code == 403
    assert client.get("/admin/rooms/message/add/").status_code == 403
    room = make_room(superuser, "Kept")
    assert client.get(f"/admin/rooms/room/{room.pk}/delete/").status_code == 403


def test_the_admin_uses_the_webs_api_key_form():
    """Write-only key, kept when blank, refused when the endpoint changes without a new key."""
    from django.urls import reverse

    superuser = make_user("keeper")
    superuser.is_staff = superuser.is_superuser = True
    superuser.save()
    owner = make_user("owner")
    agent = make_agent("keyed", model="openai:gpt-4.1", owner=owner, api_key="sk-stored-secret")
    client = Client()
    client.force_login(superuser)
    url = reverse("admin:agents_agentprofile_change", args=[agent.pk])
    page = client.get(url).content.decode()
    assert "sk-stored-secret" not in page and 'name="new_api_key"' in page and 'name="api_key"' not in page
    form = {"name": "keyed", "role_prompt": "", "model": "openai:gpt-4.1", "fallback_models": "",
            "context_window": 128000, "output_budget": 8000, "eviction_policy": "on_demand", "base_url": "",
            "allowed_tools": "[]", "created_by": owner.pk}
    assert client.post(url, {**form, "role_prompt": "kept"}).status_code == 302
    agent.refresh_from_db()
    assert (agent.role_prompt, agent.api_key) == ("kept", "sk-stored-secret")
    moved = client.post(url, {**form, "base_url": "https://elsewhere.example/v1"})
    assert moved.status_code == 200 and b"stored key belongs to the old endpoint" in moved.content
    agent.refresh_from_db()
    assert (agent.base_url, agent.api_key) == ("", "sk-stored-secret")
    client.post(url, {**form, "base_url": "https://elsewhere.example/v1", "new_api_key": "sk-new"})
    agent.refresh_from_db()
    assert (agent.base_url, agent.api_key, agent.created_by) == ("https://elsewhere.example/v1", "sk-new", owner)


def _staff(username: str = "root") -> Client:
    superuser = make_user(username)
    superuser.is_staff = superuser.is_superuser = True
    superuser.save()
    client = Client()
    client.force_login(superuser)
    return client


def _changelist_action(client: Client, model: str, action: str, *pks: int):
    from django.urls import reverse

    return client.post(reverse(f"admin:{model}_changelist"),
                       {"action": action, "_selected_action": [str(pk) for pk in pks]}, follow=True)


def test_a_posted_state_lease_or_json_state_does_not_change_a_session_in_the_admin():
    from django.urls import reverse

    client = _staff()
    owner, agent = make_user("owner"), make_agent("fixer")
    room = make_room(owner, agents=[agent])
    task = Task.objects.create(room=room, title="Fix it", objective="make tests pass")
    session = Session.objects.create(task=task, agent=agent, state="running", lease_owner="worker-1",
                                     runtime_state={"calls": []}, gateway_state={"step": 3})
    url = reverse("admin:agent_sessions_session_change", args=[session.pk])
    page = client.get(url)
    assert page.status_code == 200 and 'name="state"' not in page.content.decode()
    response = client.post(url, {"state": "succeeded", "lease_owner": "", "runtime_state": "{}",
                                 "gateway_state": "{}", "analysis": '{"x": 1}', "wake_at_0": "2020-01-01",
                                 "task": task.pk, "agent": agent.pk, "attempt": 7})
    assert response.status_code == 302
    session.refresh_from_db()
    assert (session.state, session.lease_owner, session.attempt) == ("running", "worker-1", 1)
    assert (session.runtime_state, session.gateway_state, session.analysis) == ({"calls": []}, {"step": 3}, {})
    assert client.get(reverse("admin:agent_sessions_session_add")).status_code == 403


def test_a_posted_state_does_not_decide_an_approval_in_the_admin():
    from django.urls import reverse

    from sessions.models import Approval
    from sessions.services.approvals import approval_request

    client = _staff()
    owner, agent = make_user("owner"), make_agent("fixer")
    room = make_room(owner, agents=[agent])
    task = Task.objects.create(room=room, title="Fix it", objective="make tests pass")
    session = Session.objects.create(task=task, agent=agent, state="awaiting_approval")
    approval = approval_request(session=session, call_id="c1", tool="shell", arguments={"command": "make deploy"})
    url = reverse("admin:agent_sessions_approval_change", args=[approval.pk])
    response = client.post(url, {"state": "approved", "always": "on", "session": session.pk, "call_id": "c1",
                                 "tool": "shell", "arguments": '{"command": "rm -rf /"}'})
    assert response.status_code == 302
    approval.refresh_from_db()
    assert (approval.state, approval.always, approval.arguments) == ("pending", False, {"command": "make deploy"})
    assert not SessionEvent.objects.filter(session=session, kind="approval.decided").exists()
    assert client.get(reverse("admin:agent_sessions_approval_add")).status_code == 403
    assert Approval.objects.get().decided_by is None


def test_an_approval_decided_by_an_admin_action_is_recorded_and_wakes_its_session_like_the_web():
    from sessions import dispatch
    from sessions.services.approvals import approval_request

    client = _staff()
    owner, agent = make_user("owner"), make_agent("fixer")
    room = make_room(owner, agents=[agent])
    task = Task.objects.create(room=room, title="Fix it", objective="make tests pass")
    session = Session.objects.create(task=task, agent=agent, state="awaiting_approval")
    approval = approval_request(session=session, call_id="c1", tool="shell", arguments={"command": "make deploy"})
    page = _changelist_action(client, "agent_sessions_approval", "approve_always", approval.pk).content.decode()
    assert "Decided: shell call c1 (approved)." in page
    approval.refresh_from_db()
    session.refresh_from_db()
    assert (approval.state, approval.always, approval.decided_by.username) == ("approved", True, "root")
    assert session.state == "queued" and session.attention_at is not None  # woken, people first
    assert dispatch.candidates()[0] == session.pk
    # A second decision loses the compare-and-swap: a message, not a traceback, and no event.
    page = _changelist_action(client, "agent_sessions_approval", "deny", approval.pk).content.decode()
    assert "not decided: This call was already decided." in page
    approval.refresh_from_db()
    assert approval.state == "approved"
    assert SessionEvent.objects.filter(session=session, kind="approval.decided").count() == 1


def test_removing_a_member_in_the_admin_closes_their_open_room_page():
    from asgiref.sync import async_to_sync
    from channels.db import database_sync_to_async

    from rooms.consumers import CLOSE_FORBIDDEN
    from rooms.models import Membership
    from tests.rooms.test_consumers import Socket, cookie_for

    client = _staff()
    owner, bob = make_user("owner"), make_user("bob")
    room = make_room(owner, members=[bob])
    membership = Membership.objects.get(room=room, user=bob)
    cookie = cookie_for(bob)

    async def scenario():
        socket = Socket(room.slug, cookie)
        assert await socket.open()
        await socket.hello(room.last_message_seq)
        page = await database_sync_to_async(_changelist_action)(client, "rooms_membership", "remove_from_room",
                                                               membership.pk)
        assert f"Removed bob from {room.name}." in page.content.decode()
        frame = await socket.receive()  # "root removed bob." reaches everyone in the group first
        assert frame["kind"] == "system" and frame["text"] == "root removed bob."
        assert await socket.close_code() == CLOSE_FORBIDDEN
        await socket.close()

    async_to_sync(scenario)()
    assert not Membership.objects.filter(room=room, user=bob).exists()


def test_messages_memberships_and_room_agents_change_only_through_their_services():
    from rooms.models import Membership, Message, RoomAgent

    client = _staff()
    owner = make_user("owner")
    room = make_room(owner)
    message = Message.objects.filter(room=room).first()
    assert client.get(f"/admin/rooms/message/{message.pk}/delete/").status_code == 403
    _changelist_action(client, "rooms_message", "delete_selected", message.pk)
    assert Message.objects.filter(pk=message.pk).exists()
    assert client.get("/admin/rooms/membership/add/").status_code == 403
    membership = Membership.objects.get(room=room, user=owner)
    client.post(f"/admin/rooms/membership/{membership.pk}/change/", {"role": "viewer"})
    assert Membership.objects.get(pk=membership.pk).role == "owner"
    room_agent = RoomAgent.objects.create(room=room, agent=make_agent("helper"), added_by=owner)
    assert client.get("/admin/rooms/roomagent/add/").status_code == 403
    assert client.get(f"/admin/rooms/roomagent/{room_agent.pk}/delete/").status_code == 403
    _changelist_action(client, "rooms_roomagent", "delete_selected", room_agent.pk)
    assert RoomAgent.objects.filter(pk=room_agent.pk).exists()


def test_the_admin_cannot_delete_a_membership_around_the_service_nor_remove_the_owner():
    from django.urls import reverse

    from rooms.models import Membership

    client = _staff()
    owner = make_user("owner")
    room = make_room(owner)
    membership = Membership.objects.get(room=room, user=owner)
    assert client.get(reverse("admin:rooms_membership_delete", args=[membership.pk])).status_code == 403
    page = _changelist_action(client, "rooms_membership", "delete_selected", membership.pk)
    assert Membership.objects.filter(pk=membership.pk).exists()
    page = _changelist_action(client, "rooms_membership", "remove_from_room", membership.pk).content.decode()
    assert "not removed: The room&#x27;s owner cannot be removed." in page
    assert Membership.objects.filter(pk=membership.pk).exists()


def test_the_admin_refuses_to_carry_a_stored_key_to_another_provider():
    from django.urls import reverse

    client = _staff("keeper")
    owner = make_user("owner")
    agent = make_agent("keyed", model="openai:gpt-4.1", owner=owner, api_key="sk-stored-secret")
    url = reverse("admin:agents_agentprofile_change", args=[agent.pk])
    form = {"name": "keyed", "role_prompt": "", "model": "anthropic:claude-sonnet-4-5", "fallback_models": "",
            "context_window": 128000, "output_budget": 8000, "eviction_policy": "on_demand", "base_url": "",
            "allowed_tools": "[]", "created_by": owner.pk}
    moved = client.post(url, form)
    assert moved.status_code == 200 and b"stored key belongs to the old endpoint" in moved.content
    agent.refresh_from_db()
    assert (agent.model, agent.api_key) == ("openai:gpt-4.1", "sk-stored-secret")
    assert client.post(url, {**form, "clear_api_key": "on"}).status_code == 302
    agent.refresh_from_db()
    assert (agent.model, agent.api_key) == ("anthropic:claude-sonnet-4-5", "")


def test_a_task_is_read_only_in_the_admin_its_intent_is_committed_on_the_web():
    from django.urls import reverse

    client = _staff()
    owner = make_user("owner")
    room = make_room(owner)
    task = Task.objects.create(room=room, title="Fix it", objective="make tests pass")
    url = reverse("admin:agent_sessions_task_change", args=[task.pk])
    assert client.post(url, {"room": room.pk, "title": "Other", "objective": "do nothing"}).status_code == 302
    task.refresh_from_db()
    assert (task.title, task.objective) == ("Fix it", "make tests pass")
    assert client.get(reverse("admin:agent_sessions_task_add")).status_code == 403


def test_an_approval_rule_added_in_the_admin_passes_the_webs_checks():
    from django.urls import reverse

    from sessions.models import ApprovalRule

    client = _staff()
    owner = make_user("owner")
    room = make_room(owner)
    url = reverse("admin:agent_sessions_approvalrule_add")
    refused = client.post(url, {"room": room.pk, "tool": "read_file", "path_glob": "", "decision": "allow",
                                "command_prefix": "rm -rf"})
    assert refused.status_code == 200 and b"A command prefix only applies to shell." in refused.content
    assert client.post(url, {"room": room.pk, "tool": "shell", "path_glob": "", "decision": "allow",
                             "command_prefix": "  python   -m pytest "}).status_code == 302
    assert ApprovalRule.objects.get().command_prefix == "python -m pytest"  # cleaned as on the web


def test_the_gateways_records_are_read_only_in_the_admin():
    for model_name in ("observation", "ledgerentry", "fold", "segment", "payload", "historyentry"):
        model_admin = next(a for m, a in admin.site._registry.items()
                           if m._meta.app_label == "agent_sessions" and m._meta.model_name == model_name)
        assert not model_admin.has_change_permission(None) and not model_admin.has_add_permission(None), model_name
        assert not model_admin.has_delete_permission(None), model_name


def test_staff_who_may_only_view_cannot_decide_approvals_remove_people_or_cancel_sessions():
    from django.contrib.auth.models import Permission

    from rooms.models import Membership
    from sessions.models import Approval
    from sessions.services.approvals import approval_request

    viewer = make_user("auditor")
    viewer.is_staff = True
    viewer.save()
    viewer.user_permissions.set(Permission.objects.filter(
        codename__in=["view_approval", "view_membership", "view_session"]))
    client = Client()
    client.force_login(viewer)
    owner, bob, agent = make_user("owner"), make_user("bob"), make_agent("fixer")
    room = make_room(owner, members=[bob], agents=[agent])
    task = Task.objects.create(room=room, title="Fix it", objective="make tests pass")
    session = Session.objects.create(task=task, agent=agent, state="awaiting_approval")
    approval = approval_request(session=session, call_id="c1", tool="shell", arguments={"command": "make deploy"})
    membership = Membership.objects.get(room=room, user=bob)
    assert _changelist_action(client, "agent_sessions_approval", "approve_always", approval.pk).status_code == 200
    assert _changelist_action(client, "rooms_membership", "remove_from_room", membership.pk).status_code == 200
    assert _changelist_action(client, "agent_sessions_session", "cancel", session.pk).status_code == 200
    approval.refresh_from_db()
    session.refresh_from_db()
    assert (approval.state, approval.always) == ("pending", False)
    assert Membership.objects.filter(pk=membership.pk).exists()
    assert session.state == "awaiting_approval"
    assert Approval.objects.get().decided_by is None


def test_only_staff_act_as_staff_on_a_room_they_are_not_in():
    from rooms.errors import RoomPermissionError
    from rooms.models import Membership
    from sessions.services.approvals import approval_decide, approval_request

    owner, bob, mallory, agent = make_user("owner"), make_user("bob"), make_user("mallory"), make_agent("fixer")
    room = make_room(owner, members=[bob], agents=[agent])
    task = Task.objects.create(room=room, title="Fix it", objective="make tests pass")
    session = Session.objects.create(task=task, agent=agent, state="awaiting_approval")
    approval = approval_request(session=session, call_id="c1", tool="shell", arguments={"command": "ls"})
    with pytest.raises(RoomPermissionError):
        services.membership_remove(room=room, actor=mallory, user_id=bob.pk, as_staff=True)
    with pytest.raises(RoomPermissionError):
        approval_decide(approval=approval, actor=mallory, decision="approve", as_staff=True)
    assert Membership.objects.filter(room=room, user=bob).exists()
    approval.refresh_from_db()
    assert approval.state == "pending"
