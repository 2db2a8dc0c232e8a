"""Model specs to providers, keys and base URLs from arguments or the environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agents.providers import (
    InvalidModelSpec,
    ModelEndpoint,
    Rejected,
    parse_fallbacks,
    parse_spec,
    provider_for,
)
from agents.providers.anthropic_messages import AnthropicProvider
from agents.providers.factory import NO_KEY
from agents.providers.openai_chat import OpenAIProvider


@pytest.mark.parametrize("spec", ["gpt-4o", "gemini:pro", "openai", "Openai:gpt-4o", ""])
def test_an_unknown_prefix_is_refused_with_the_accepted_forms(spec):
    with pytest.raises(
        InvalidModelSpec, match="expected openai:<model>, anthropic:<model> or replay:<file>"
    ):
        parse_spec(spec)


def test_a_spec_without_a_model_name_is_refused():
    with pytest.raises(InvalidModelSpec, match="names no model"):
        parse_spec("anthropic:  ")


def test_an_invalid_spec_is_a_permanent_rejection_and_a_value_error():
    with pytest.raises(Rejected):
        provider_for("mystery:x", env={})
    with pytest.raises(ValueError):
        provider_for("mystery:x", env={})


def test_spec_names_keep_their_colons():
    assert parse_spec("openai:ollama/qwen2.5-coder:7b").name == "ollama/qwen2.5-coder:7b"


def test_fallbacks_parse_from_a_profile_field():
    assert parse_fallbacks(" openai:gpt-4o-mini, ,anthropic:claude-haiku-4-5 ") == (
        "openai:gpt-4o-mini",
        "anthropic:claude-haiku-4-5",
    )


def test_openai_on_its_own_api_needs_a_key():
    with pytest.raises(InvalidModelSpec, match="needs an API key: set OPENAI_API_KEY"):
        provider_for("openai:gpt-4o", env={})


def test_a_local_openai_compatible_server_needs_no_key():
    provider = provider_for("openai:llama3", env={"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"})

    (endpoint,) = provider.chain
    assert isinstance(endpoint, OpenAIProvider)
    assert endpoint.base_url == "http://127.0.0.1:11434/v1"
    assert endpoint._api_key == NO_KEY


def test_arguments_win_over_the_environment_and_blank_arguments_do_not():
    env = {"ANTHROPIC_API_KEY": "env-key", "ANTHROPIC_BASE_URL": "http://env.example"}

    explicit = provider_for(
        "anthropic:claude-haiku-4-5", api_key="agent-key", base_url="http://agent.example", env=env
    )
    blank = provider_for("anthropic:claude-haiku-4-5", api_key="", base_url="", env=env)

    assert isinstance(explicit.chain[0], AnthropicProvider)
    assert (explicit.chain[0]._api_key, explicit.chain[0].base_url) == (
        "agent-key",
        "http://agent.example",
    )
    assert (blank.chain[0]._api_key, blank.chain[0].base_url) == ("env-key", "http://env.example")


def test_anthropic_needs_a_key():
    with pytest.raises(InvalidModelSpec, match="set ANTHROPIC_API_KEY"):
        provider_for("anthropic:claude-haiku-4-5", env={})


def test_fallback_endpoints_bring_their_own_settings():
    provider = provider_for(
        "anthropic:claude-opus-4-8",
        api_key="agent-key",
        fallbacks=[
            "openai:gpt-4o-mini",
            ModelEndpoint("openai:qwen", base_url="http://vllm:8000/v1"),
        ],
        env={"OPENAI_API_KEY": "env-openai-key"},
    )

    primary, env_fallback, explicit = provider.chain
    assert provider.spec == "anthropic:claude-opus-4-8"
    assert env_fallback.spec == "openai:gpt-4o-mini" and env_fallback._api_key == "env-openai-key"
    assert explicit.base_url == "http://vllm:8000/v1"
    assert "agent-key" not in (env_fallback._api_key, explicit._api_key)
    # Its own base URL without its own key: the environment's key does not go there.
    assert explicit._api_key == NO_KEY


def test_the_providers_package_never_imports_django():
    root = Path(__file__).resolve().parents[3]
    code = "import sys, agents.providers\nprint('django' in sys.modules)"

    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )

    assert out.stdout.strip() == "False"
