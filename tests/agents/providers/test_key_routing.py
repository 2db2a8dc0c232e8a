"""Which key goes where: the hub's environment key never reaches a profile's base URL.

Every test reads the credential headers a local server actually received.
"""

from __future__ import annotations

import pytest

from agents.providers import InvalidModelSpec, ModelEndpoint, RetryPolicy, provider_for
from agents.providers.factory import NO_KEY
from agents.providers.timeouts import Timeouts
from tests.agents.providers.requests import first_request
from tests.agents.providers.wire_server import load_fixture

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
HUB_OPENAI_KEY = "sk-hub-openai-0123456789"
HUB_ANTHROPIC_KEY = "sk-ant-hub-0123456789"
PROFILE_KEY = "sk-profile-abcdef"


GATEWAY_TOKEN = "gw-hub-secret-42"


@pytest.fixture
def hub_env(monkeypatch):
    """The hub's keys in the real environment too, where the SDKs would look for them."""
    for name in (
        "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN",
        "OPENAI_CUSTOM_HEADERS", "ANTHROPIC_CUSTOM_HEADERS", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", HUB_OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", HUB_ANTHROPIC_KEY)


@pytest.fixture
def hub_gateway_headers(hub_env, monkeypatch):
    """Headers the SDKs add on their own from the environment (a gateway's credentials)."""
    headers = f"Authorization: Bearer {GATEWAY_TOKEN}\nX-Gateway-Token: {GATEWAY_TOKEN}"
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", headers)
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", headers)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-hub")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-hub")


def anthropic_key(received) -> str:
    """The key as this SDK sends it: ``x-api-key`` or, in newer SDKs, a Bearer token."""
    return received.headers.get("x-api-key") or received.headers.get(
        "authorization", ""
    ).removeprefix("Bearer ")


def no_hub_key_in(received) -> bool:
    return not any(
        secret in value
        for value in received.headers.values()
        for secret in (HUB_OPENAI_KEY, HUB_ANTHROPIC_KEY, GATEWAY_TOKEN, "org-hub", "proj-hub")
    )


def test_a_profile_base_url_without_a_key_gets_the_placeholder_not_the_hubs_key(wire, hub_env):
    wire.reply(CHAT, json_body=load_fixture("deepseek_chat_text.json"))

    provider_for("openai:exfil", base_url=f"{wire.url}/v1", timeouts=Timeouts(connect=5, answer=5)).call(first_request())

    (sent,) = wire.requests_to(CHAT)
    assert sent.headers["authorization"] == f"Bearer {NO_KEY}"
    assert no_hub_key_in(sent)


def test_a_profile_base_url_gets_the_profiles_own_key(wire, hub_env):
    wire.reply(CHAT, json_body=load_fixture("deepseek_chat_text.json"))

    provider_for(
        "openai:local", api_key=PROFILE_KEY, base_url=f"{wire.url}/v1", timeouts=Timeouts(connect=5, answer=5)
    ).call(first_request())

    (sent,) = wire.requests_to(CHAT)
    assert sent.headers["authorization"] == f"Bearer {PROFILE_KEY}"


@pytest.mark.parametrize("profile_url", ["", "{url}/v1", "{url}/v1/"])
def test_the_environments_key_goes_to_the_environments_base_url(
    wire, hub_env, monkeypatch, profile_url
):
    monkeypatch.setenv("OPENAI_BASE_URL", f"{wire.url}/v1")
    wire.reply(CHAT, json_body=load_fixture("deepseek_chat_text.json"))

    provider_for(
        "openai:deepseek-chat", base_url=profile_url.format(url=wire.url), timeouts=Timeouts(connect=5, answer=5)
    ).call(first_request())

    (sent,) = wire.requests_to(CHAT)
    assert sent.headers["authorization"] == f"Bearer {HUB_OPENAI_KEY}"


def test_the_environments_key_goes_to_the_official_endpoint_named_by_a_profile():
    provider = provider_for(
        "openai:gpt-4o",
        base_url="HTTPS://api.openai.com/v1/",
        env={"OPENAI_API_KEY": HUB_OPENAI_KEY},
    )

    assert provider.chain[0]._api_key == HUB_OPENAI_KEY


def test_an_anthropic_profile_base_url_without_its_own_key_is_refused_before_any_request(
    wire, hub_env
):
    with pytest.raises(InvalidModelSpec, match="needs the agent's own API key") as caught:
        provider_for("anthropic:claude-haiku-4-5", base_url=wire.url, timeouts=Timeouts(connect=5, answer=5))

    assert HUB_ANTHROPIC_KEY not in str(caught.value)
    assert wire.requests == []


def test_an_anthropic_profile_base_url_gets_only_the_profiles_key(wire, hub_env):
    wire.reply(MESSAGES, json_body=load_fixture("anthropic_message_text.json"))

    provider_for(
        "anthropic:claude-haiku-4-5", api_key=PROFILE_KEY, base_url=wire.url, timeouts=Timeouts(connect=5, answer=5)
    ).call(first_request())

    (sent,) = wire.requests_to(MESSAGES)
    assert anthropic_key(sent) == PROFILE_KEY
    assert no_hub_key_in(sent)


def test_anthropics_environment_key_goes_to_anthropics_environment_base_url(
    wire, hub_env, monkeypatch
):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", wire.url)
    wire.reply(MESSAGES, json_body=load_fixture("anthropic_message_text.json"))

    provider_for("anthropic:claude-haiku-4-5", timeouts=Timeouts(connect=5, answer=5)).call(first_request())

    (sent,) = wire.requests_to(MESSAGES)
    assert anthropic_key(sent) == HUB_ANTHROPIC_KEY


def test_a_fallback_endpoints_base_url_never_receives_the_environments_key(
    wire, refusing, sleep, hub_env
):
    wire.reply(CHAT, json_body=load_fixture("deepseek_chat_text.json"))
    provider = provider_for(
        "openai:gpt-4.1",
        api_key=PROFILE_KEY,
        base_url=f"{refusing.url}/v1",
        fallbacks=[ModelEndpoint("openai:exfil", base_url=f"{wire.url}/v1")],
        timeouts=Timeouts(connect=5, answer=5),
        sleep=sleep,
        policy=RetryPolicy(max_attempts=2),
    )

    completion = provider.call(first_request())

    (sent,) = wire.requests_to(CHAT)
    assert completion.record.fallback_used
    assert sent.headers["authorization"] == f"Bearer {NO_KEY}"
    assert no_hub_key_in(sent) and PROFILE_KEY not in sent.headers["authorization"]


def test_an_anthropic_fallback_endpoint_without_its_own_key_is_refused(hub_env):
    with pytest.raises(InvalidModelSpec, match="needs the agent's own API key"):
        provider_for(
            "openai:gpt-4o",
            fallbacks=[ModelEndpoint("anthropic:claude-haiku-4-5", base_url="http://evil.test")],
        )


def test_a_profile_base_url_gets_none_of_the_headers_the_sdk_reads_from_the_environment(
    wire, hub_gateway_headers
):
    wire.reply(CHAT, json_body=load_fixture("deepseek_chat_text.json"))
    wire.reply(CHAT, json_body=load_fixture("deepseek_chat_text.json"))

    provider_for("openai:exfil", base_url=f"{wire.url}/v1", timeouts=Timeouts(connect=5, answer=5)).call(first_request())
    provider_for(
        "openai:local", api_key=PROFILE_KEY, base_url=f"{wire.url}/v1", timeouts=Timeouts(connect=5, answer=5)
    ).call(first_request())

    keyless, keyed = wire.requests_to(CHAT)
    assert keyless.headers["authorization"] == f"Bearer {NO_KEY}"
    assert keyed.headers["authorization"] == f"Bearer {PROFILE_KEY}"
    for sent in (keyless, keyed):
        assert no_hub_key_in(sent)
        assert not {"x-gateway-token", "openai-organization", "openai-project"} & set(sent.headers)


def test_an_anthropic_profile_base_url_gets_its_own_key_and_no_environment_headers(
    wire, hub_gateway_headers
):
    wire.reply(MESSAGES, json_body=load_fixture("anthropic_message_text.json"))

    provider_for(
        "anthropic:claude-haiku-4-5", api_key=PROFILE_KEY, base_url=wire.url, timeouts=Timeouts(connect=5, answer=5)
    ).call(first_request())

    (sent,) = wire.requests_to(MESSAGES)
    assert anthropic_key(sent) == PROFILE_KEY
    assert no_hub_key_in(sent)
    assert "x-gateway-token" not in sent.headers


def test_the_environments_headers_still_reach_the_environments_base_url(
    wire, hub_gateway_headers, monkeypatch
):
    monkeypatch.setenv("OPENAI_BASE_URL", f"{wire.url}/v1")
    wire.reply(CHAT, json_body=load_fixture("deepseek_chat_text.json"))

    provider_for("openai:deepseek-chat", timeouts=Timeouts(connect=5, answer=5)).call(first_request())

    (sent,) = wire.requests_to(CHAT)
    assert sent.headers["x-gateway-token"] == GATEWAY_TOKEN
    assert sent.headers["openai-organization"] == "org-hub"
