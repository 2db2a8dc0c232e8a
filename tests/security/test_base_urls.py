"""Issue 24: an agent profile's base URL could be 127.0.0.1:6379, and the hub POSTed the
conversation there and echoed what came back. A base URL that leads to this machine or a
private network is now refused when the profile is saved and when a provider is built
for it, unless the operator allows its host or network (ATRIUM_BASE_URL_ALLOW)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from agents.models import AgentProfile
from agents.providers.errors import InvalidModelSpec
from agents.providers.factory import provider_for
from tests.rooms.factories import make_user

pytestmark = pytest.mark.django_db

INTERNAL = ["http://127.0.0.1:6379", "http://localhost:5432/v1", "http://[::1]:8000/v1", "http://10.1.2.3/v1",
            "http://169.254.169.254/latest", "http://192.168.1.10:11434/v1", "http://0.0.0.0:8000", "redis://example.com"]


@pytest.fixture
def no_allowlist(monkeypatch):
    monkeypatch.delenv("ATRIUM_BASE_URL_ALLOW", raising=False)


@pytest.mark.parametrize("url", INTERNAL)
def test_a_profile_cannot_point_at_the_hubs_machine_or_a_private_network(no_allowlist, url):
    profile = AgentProfile(name="probe", model="openai:gpt-4.1-mini", base_url=url, api_key="sk-x",
                           created_by=make_user())
    with pytest.raises(ValidationError) as refused:
        profile.full_clean()
    assert "base_url" in refused.value.message_dict
    with pytest.raises(InvalidModelSpec, match="base URL is refused"):
        provider_for("openai:gpt-4.1-mini", api_key="sk-x", base_url=url)


def test_the_operator_may_allow_a_network_or_a_host(monkeypatch):
    monkeypatch.setenv("ATRIUM_BASE_URL_ALLOW", "10.1.0.0/16,localhost")
    for url in ("http://10.1.2.3/v1", "http://localhost:8000/v1"):
        AgentProfile(name="vllm", model="openai:m", base_url=url, api_key="sk-x", created_by=make_user()).full_clean()
        assert provider_for("openai:m", api_key="sk-x", base_url=url)
    with pytest.raises(InvalidModelSpec):
        provider_for("openai:m", api_key="sk-x", base_url="http://10.2.0.1/v1")


def test_public_and_unresolvable_hosts_are_not_refused(no_allowlist):
    for url in ("https://api.example.com/v1", "http://8.8.8.8/v1", "http://vllm.internal.invalid:8000/v1"):
        AgentProfile(name="p", model="openai:m", base_url=url, api_key="sk-x", created_by=make_user()).full_clean()
