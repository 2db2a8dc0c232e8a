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
    "fallback_models": "openai:gpt-4.1, replay:demo-fix-median.json",
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
        # Issue 30: a window every session of which stopped at its first request.
        ({"context_window": 2600, "output_budget": 1000}, "context_window", "cannot hold this agent's fixed prompt"),
        ({"eviction_policy": "sometimes"}, "eviction_policy", "Select a valid choice"),
    ],
    ids=["fallback", "tiny-window", "budget-over-window", "window-under-prompt", "policy"],
)
def test_budgets_fallbacks_and_policies_are_validated(client, changes, field, message):
    response = client.post(reverse("agents:create"), {**VALID, **changes})
    assert message in response.context["form"].errors[field][0]
    assert not AgentProfile.objects.exists()


def test_an_agent_profile_is_edited_on_the_web(client, maker):
    agent = make_agent("Old", model="openai:gpt-4.1", owner=maker)
    page = client.get(reverse("agents:edit", args=[agent.pk]))
    assert b'value="openai:gpt-4.1"' in page.content
    response = client.post(reverse("agents:edit", args=[agent.pk]), {**VALID, "name": "New", "model": "replay:demo-fix-median.json"})
    assert response.status_code == 302
    agent.refresh_from_db()
    assert (agent.name, agent.model) == ("New", "replay:demo-fix-median.json")
    assert client.get(reverse("agents:edit", args=[99999])).status_code == 404


def test_an_api_key_is_write_only_and_kept_unless_replaced_or_removed(client):
    client.post(reverse("agents:create"), {**VALID, "new_api_key": "sk-secret-123456"})
    agent = AgentProfile.objects.get(name="Fixer")
    assert agent.api_key == "sk-secret-123456"
    page = client.get(reverse("agents:edit", args=[agent.pk])).content.decode()
    assert "sk-secret-123456" not in page and "Remove the stored API key" in page
    # Issue 30: a new profile offered to remove a key it does not have.
    assert "Remove the stored API key" not in client.get(reverse("agents:create")).content.decode()
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


def test_an_agent_sets_its_own_prices_and_a_negative_price_is_refused(client):
    from decimal import Decimal

    client.post(reverse("agents:create"), {**VALID, "model": "openai:qwen3-coder", "price_input": "0.40",
                                           "price_output": "1.60"})
    agent = AgentProfile.objects.get(name="Fixer")
    assert (agent.price_input, agent.price_output, agent.price_cached_input) == (Decimal("0.40"), Decimal("1.60"), None)
    price = agent.price_for(agent.model)
    assert price.known and price.source == "profile"
    assert not agent.price_for("openai:other-model").known  # a fallback is priced by the table only
    page = client.get(reverse("sessions:agent_detail", args=[agent.pk])).content.decode()
    assert "input 0.4, cached input 0.4, cache write 0.4, output 1.6 (this profile's own)" in page
    response = client.post(reverse("agents:edit", args=[agent.pk]), {**VALID, "price_input": "-1"})
    assert "greater than or equal to 0" in response.context["form"].errors["price_input"][0]


def test_a_replay_file_that_does_not_exist_is_refused_when_saved(client):
    response = client.post(reverse("agents:create"), {**VALID, "model": "replay:nope.json"})
    assert response.status_code == 200
    assert "replay file not found" in response.context["form"].errors["model"][0]
    response = client.post(reverse("agents:create"), {**VALID, "fallback_models": "replay:../../etc/passwd"})
    assert "names a file in the hub's replay folder" in response.context["form"].errors["fallback_models"][0]
    assert not AgentProfile.objects.exists()


def test_a_provider_without_a_key_is_saved_with_a_warning(client, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    response = client.post(reverse("agents:create"), {**VALID, "fallback_models": ""}, follow=True)
    assert AgentProfile.objects.filter(name="Fixer").exists()
    messages = [str(m) for m in response.context["messages"]]
    assert any("needs an API key" in m and "sessions of this agent fail until it is set" in m for m in messages)
    # With the agent's own key it is usable, and nothing is said.
    response = client.post(reverse("agents:create"), {**VALID, "name": "Keyed", "fallback_models": "",
                                                      "new_api_key": "sk-test"}, follow=True)
    assert not any("API key" in str(m) for m in response.context["messages"])


def test_the_form_offers_the_hubs_recordings_as_models(client, settings, tmp_path):
    """Issue 30: the agent form named no replay: file, so a newcomer without a key could
    not find the recorded agents."""
    page = client.get(reverse("agents:create")).content.decode()
    assert 'list="model-recordings"' in page
    assert '<option value="replay:demo-fix-median.json">' in page
    assert "Recorded agents on this hub, which need no key: <code>replay:" in page
    assert "<code>replay:demo-fix-median.json</code>" in page

    (tmp_path / "b.jsonl").write_text("[]")
    (tmp_path / "a.json").write_text("[]")
    (tmp_path / "notes.txt").write_text("not a recording")
    (tmp_path / "nested.json").mkdir()
    settings.REPLAYS_DIR = tmp_path
    page = client.get(reverse("agents:create")).content.decode()
    datalist = page[page.index('<datalist id="model-recordings">'):page.index("</datalist>")]
    assert datalist.count("<option") == 2 and datalist.index("replay:a.json") < datalist.index("replay:b.jsonl")

    settings.REPLAYS_DIR = tmp_path / "missing"
    page = client.get(reverse("agents:create")).content.decode()
    assert "model-recordings" not in page  # no folder, nothing offered, no error
