"""Issue 24: an agent profile's base URL could be 127.0.0.1:6379, and the hub POSTed the
conversation there and echoed what came back. A base URL that leads to this machine or a
private network is now refused when the profile is saved and when a provider is built
for it, unless the operator allows its host or network (ATRIUM_BASE_URL_ALLOW)."""

from __future__ import annotations

import asyncio
import socket
import uuid

import pytest
from django.core.exceptions import ValidationError

from agents.models import AgentProfile
from agents.providers import ProviderError, RetryPolicy
from agents.providers.errors import InvalidModelSpec
from agents.providers.factory import UpstreamEndpoint, provider_for
from endpoint.upstream import relay
from endpoint.wire import WireError
from tests.agents.providers.requests import session_request
from tests.agents.providers.wire_server import load_fixture
from tests.rooms.factories import make_user

CHAT = "/v1/chat/completions"

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


# --- at connection time: DNS rebinding and redirects --------------------------------------

PUBLIC = "93.184.216.34"


@pytest.fixture
def resolver(monkeypatch):
    """The name server of the attacker's domain (the one edge these tests cannot reach):
    names under ``.test`` resolve to what the test says, now."""
    answers: dict[str, str] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else host  # anyio asks with IDNA bytes
        if name in answers:
            return real(answers[name], port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answers


def test_a_name_that_answers_with_this_machine_after_the_check_reaches_nothing(no_allowlist, resolver, wire):
    wire.reply(CHAT, json_body=load_fixture("openai_chat_tool_calls.json"))
    host = f"rebind-{uuid.uuid4().hex[:6]}.test"
    resolver[host] = PUBLIC  # when the profile is saved and its provider built: the internet
    port = wire.url.rsplit(":", 1)[1]
    provider = provider_for("openai:m", api_key="sk-x", base_url=f"http://{host}:{port}/v1",
                            policy=RetryPolicy(max_attempts=1))
    resolver[host] = "127.0.0.1"  # the next answer, a second later: the hub's own machine
    with pytest.raises(ProviderError, match="refused by the hub") as refused:
        provider.call(session_request())
    assert "127.0.0.1" in str(refused.value)
    assert wire.requests_to(CHAT) == []


def test_a_redirect_from_an_allowed_host_to_this_machine_is_not_followed(monkeypatch, resolver, wire):
    host = f"models-{uuid.uuid4().hex[:6]}.test"
    monkeypatch.setenv("ATRIUM_BASE_URL_ALLOW", host)  # the operator's own model server
    resolver[host] = "127.0.0.1"
    port = wire.url.rsplit(":", 1)[1]
    wire.reply(CHAT, status=307, json_body={}, headers={"Location": f"http://127.0.0.2:{port}/v1/chat/completions"})
    provider = provider_for("openai:m", api_key="sk-x", base_url=f"http://{host}:{port}/v1",
                            policy=RetryPolicy(max_attempts=1))
    with pytest.raises(ProviderError, match="refused by the hub"):
        provider.call(session_request())
    assert len(wire.requests_to(CHAT)) == 1  # the allowed host was reached, the redirect's target not


def test_the_operators_own_base_url_is_not_checked_per_connection(monkeypatch, wire):
    wire.reply(CHAT, json_body=load_fixture("openai_chat_tool_calls.json"))
    monkeypatch.delenv("ATRIUM_BASE_URL_ALLOW", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{wire.url}/v1")  # the operator chose it: loopback is fine
    monkeypatch.setenv("OPENAI_API_KEY", "sk-operator")
    assert provider_for("openai:m", policy=RetryPolicy(max_attempts=1)).call(session_request()).turn.tool_calls


def test_the_gateways_pass_through_checks_its_connections_too(no_allowlist, resolver, wire):
    wire.reply(CHAT, json_body=load_fixture("openai_chat_tool_calls.json"))
    host = f"relay-{uuid.uuid4().hex[:6]}.test"
    resolver[host] = "127.0.0.1"  # what the name answers when the client's request is relayed
    port = wire.url.rsplit(":", 1)[1]
    endpoint = UpstreamEndpoint("openai", "m", f"http://{host}:{port}/v1", "sk-x", trusted=False)
    with pytest.raises(WireError, match="Cannot reach the upstream") as refused:
        asyncio.run(relay(endpoint, "openai", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}, {}))
    assert refused.value.status == 502
    assert wire.requests_to(CHAT) == []  # it never reached this machine
