from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.test import Client

from agents.models import Session, SessionEvent, Task
from rooms import services
from tests.rooms.factories import make_agent, make_room, make_user

pytestmark = pytest.mark.django_db(transaction=True)

OUR_APPS = ("rooms", "agents")
PROJECT_APPS = ("rooms", "agents", "observations")


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


def test_rooms_and_messages_cannot_be_added_by_hand_in_the_admin():
    superuser = make_user("root")
    superuser.is_staff = superuser.is_superuser = True
    superuser.save()
    client = Client()
    client.force_login(superuser)
    assert client.get("/admin/rooms/room/add/").status_code == 403
    assert client.get("/admin/rooms/message/add/").status_code == 403


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
