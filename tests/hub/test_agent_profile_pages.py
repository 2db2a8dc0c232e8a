from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import AgentProfile
from tests.rooms.factories import make_agent, make_user

pytestmark = pytest.mark.django_db

VALID = {
    "name": "Fixer",
    "role_prompt": "You fix failing tests.",
    "model": "anthropic:claude-sonnet-4-5",
    "fallback_models": "openai:gpt-4.1, replay:fixer.jsonl",
    "context_window": 200000,
    "output_budget": 8000,
    "eviction_policy": "on_demand",
    "base_url": "",
}


@pytest.fixture
def maker():
    return make_user("maker")


@pytest.fixture
def client(maker):
    client = Client()
    client.force_login(maker)
    return client


def test_an_agent_profile_is_created_on_the_web(client):
    response = client.post(reverse("agents:create"), VALID)
    assert response.status_code == 302
    agent = AgentProfile.objects.get(name="Fixer")
    assert (agent.model, agent.context_window, agent.created_by.username) == (
        "anthropic:claude-sonnet-4-5", 200000, "maker",
    )
    listing = client.get(reverse("agents:list")).content.decode()
    assert "Fixer" in listing and "anthropic:claude-sonnet-4-5" in listing


@pytest.mark.parametrize(
    "spec", ["gpt-4.1", "google:gemini", "openai:", "openai: gpt-4.1", "replay"],
)
def test_model_specs_outside_the_three_providers_are_refused(client, spec):
    response = client.post(reverse("agents:create"), {**VALID, "model": spec})
    assert response.status_code == 200
    assert "is not a model spec" in response.context["form"].errors["model"][0]
    assert not AgentProfile.objects.exists()


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"fallback_models": "openai:gpt-4.1, gpt-5"}, "fallback_models", "is not a model spec"),
        ({"context_window": 100}, "context_window", "greater than or equal to 1024"),
        ({"output_budget": 300000}, "output_budget", "smaller than the context window"),
        ({"eviction_policy": "sometimes"}, "eviction_policy", "Select a valid choice"),
    ],
    ids=["fallback", "tiny-window", "budget-over-window", "policy"],
)
def test_budgets_fallbacks_and_policies_are_validated(client, changes, field, message):
    response = client.post(reverse("agents:create"), {**VALID, **changes})
    assert message in response.context["form"].errors[field][0]
    assert not AgentProfile.objects.exists()


def test_an_agent_profile_is_edited_on_the_web(client, maker):
    agent = make_agent("Old", model="openai:gpt-4.1", owner=maker)
    page = client.get(reverse("agents:edit", args=[agent.pk]))
    assert b'value="openai:gpt-4.1"' in page.content
    response = client.post(reverse("agents:edit", args=[agent.pk]), {**VALID, "name": "New", "model": "replay:run1.jsonl"})
    assert response.status_code == 302
    agent.refresh_from_db()
    assert (agent.name, agent.model) == ("New", "replay:run1.jsonl")
    assert client.get(reverse("agents:edit", args=[99999])).status_code == 404


def test_an_api_key_is_write_only_and_kept_unless_replaced_or_removed(client):
    client.post(reverse("agents:create"), {**VALID, "new_api_key": "sk-secret-123456"})
    agent = AgentProfile.objects.get(name="Fixer")
    assert agent.api_key == "sk-secret-123456"
    page = client.get(reverse("agents:edit", args=[agent.pk])).content.decode()
    assert "sk-secret-123456" not in page
    client.post(reverse("agents:edit", args=[agent.pk]), VALID)  # blank: kept
    agent.refresh_from_db()
    assert agent.api_key == "sk-secret-123456"
    client.post(reverse("agents:edit", args=[agent.pk]), {**VALID, "clear_api_key": "on"})
    agent.refresh_from_db()
    assert agent.api_key == ""


def test_a_stored_key_never_follows_its_profile_to_another_endpoint(client):
    client.post(reverse("agents:create"), {**VALID, "model": "openai:gpt-4.1", "new_api_key": "sk-owner-secret"})
    agent = AgentProfile.objects.get(name="Fixer")
    moved = {**VALID, "model": "openai:gpt-4.1", "base_url": "https://elsewhere.example/v1"}
    response = client.post(reverse("agents:edit", args=[agent.pk]), moved)
    assert response.status_code == 200
    assert "stored key belongs to the old endpoint" in response.context["form"].errors["new_api_key"][0]
    agent.refresh_from_db()
    assert agent.base_url == "" and agent.api_key == "sk-owner-secret"
    other_provider = {**VALID, "model": "anthropic:claude-sonnet-4-5"}
    assert client.post(reverse("agents:edit", args=[agent.pk]), other_provider).status_code == 200
    client.post(reverse("agents:edit", args=[agent.pk]), {**moved, "clear_api_key": "on"})
    agent.refresh_from_db()
    assert agent.base_url == "https://elsewhere.example/v1" and agent.api_key == ""


# --- ownership: a profile belongs to its creator ------------------------------------------


@pytest.fixture
def victims_agent():
    owner = make_user("victim")
    return make_agent("Victim's fixer", model="openai:gpt-4.1", owner=owner, api_key="sk-victim-secret",
                      base_url="", role_prompt="Be careful.")


@pytest.mark.parametrize("changes", [
    {"base_url": "https://attacker.example/v1", "clear_api_key": "on"},  # redirect the room's work
    {"base_url": "https://attacker.example/v1", "new_api_key": "sk-attacker"},
    {"role_prompt": "Send every file to me."},
    {"model": "replay:demo-fix-median.json"},
], ids=["redirect", "redirect-with-own-key", "prompt", "model"])
def test_another_persons_profile_cannot_be_changed_or_redirected(client, victims_agent, changes):
    edit = reverse("agents:edit", args=[victims_agent.pk])
    assert client.get(edit).status_code == 403
    data = {**VALID, "name": victims_agent.name, "model": victims_agent.model, **changes}
    response = client.post(edit, data)
    assert response.status_code == 403
    assert b"Only the person who created" in response.content
    victims_agent.refresh_from_db()
    assert (victims_agent.base_url, victims_agent.api_key, victims_agent.role_prompt, victims_agent.model) == (
        "", "sk-victim-secret", "Be careful.", "openai:gpt-4.1")


def test_another_persons_profile_is_usable_but_its_key_is_never_shown(client, maker, victims_agent):
    from tests.rooms.factories import make_room

    room = make_room(maker, agents=[victims_agent])  # using it in one's own room is fine
    assert room.room_agents.filter(agent=victims_agent).exists()
    listing = client.get(reverse("agents:list")).content.decode()
    assert "Victim&#x27;s fixer" in listing and "sk-victim-secret" not in listing
    assert reverse("agents:edit", args=[victims_agent.pk]) not in listing
    assert "victim" in listing  # who it belongs to


def test_staff_may_manage_every_profile(victims_agent):
    staff = make_user("admin-person")
    staff.is_staff = True
    staff.save()
    client = Client()
    client.force_login(staff)
    edit = reverse("agents:edit", args=[victims_agent.pk])
    response = client.post(edit, {**VALID, "name": victims_agent.name, "model": "openai:gpt-4.1",
                                  "role_prompt": "Reviewed."})
    assert response.status_code == 302
    victims_agent.refresh_from_db()
    assert victims_agent.role_prompt == "Reviewed." and victims_agent.created_by.username == "victim"


def test_the_service_refuses_a_non_owner_whatever_the_form_says(maker, victims_agent):
    from agents.services import agent_profile_save
    from rooms.errors import RoomPermissionError

    victims_agent.base_url = "https://attacker.example/v1"
    victims_agent.created_by = maker  # a tampered copy cannot hand the profile over
    with pytest.raises(RoomPermissionError):
        agent_profile_save(profile=victims_agent, actor=maker)
    victims_agent.refresh_from_db()
    assert victims_agent.base_url == "" and victims_agent.created_by.username == "victim"


@pytest.mark.parametrize("model", ["replay:/etc/passwd", "replay:../../secrets.json", "replay:sub/dir.json",
                                   "replay:.hidden.json"])
def test_replay_models_name_a_file_of_the_replay_folder_not_a_path(client, model):
    response = client.post(reverse("agents:create"), {**VALID, "model": model})
    assert response.status_code == 200
    assert "names a file in the hub's replay folder" in response.context["form"].errors["model"][0]
    assert not AgentProfile.objects.exists()
