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

