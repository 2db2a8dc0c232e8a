"""Model specs (``openai:<model>``, ``anthropic:<model>``, ``replay:<file>``) to providers.

Settings come as arguments or from the environment (``OPENAI_API_KEY``,
``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``); an argument wins
over the environment, and an empty string counts as absent (blank profile fields).

The environment's key belongs to the hub: it is only sent to the environment's base URL
or the provider's official endpoint. A base URL from an agent profile gets the
profile's own key or none, or anyone who may edit a profile could point it at their
own server and collect the hub's key.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from agents.providers.addresses import AddressRefused, allowed_from, check_base_url
from agents.providers.anthropic_messages import ANTHROPIC_DEFAULT_BASE_URL, AnthropicProvider
from agents.providers.base import Provider
from agents.providers.checked_http import checked_client
from agents.providers.errors import InvalidModelSpec, display_url
from agents.providers.openai_chat import OPENAI_DEFAULT_BASE_URL, OpenAIProvider
from agents.providers.replay import ReplayProvider
from agents.providers.resilience import ResilientProvider, RetryPolicy
from agents.providers.timeouts import DEFAULT_TIMEOUTS, Timeouts
from observations.gateway.model_spec import (
    FILE_KINDS,
    ModelSpec,
    ModelSpecError,
    parse_model_spec,
)

# Local OpenAI-compatible servers (Ollama, llama.cpp, vLLM) need no key, but the SDK
# refuses to start without one.
NO_KEY = "no-key"


@dataclass(frozen=True, slots=True)
class ProviderKind:
    """What a spec's kind (``openai:``, ``anthropic:``) is called with."""

    provider: type  # its Provider class
    env_prefix: str  # <prefix>_API_KEY, <prefix>_BASE_URL, <prefix>_CUSTOM_HEADERS
    official_url: str
    keyless_off_official: bool  # a server other than the official one may need no key (local servers)


# Kinds whose model is a file the hub keeps (``replay:<file>``), each a loader from the
# file's name to its Provider. An app above adds its own (evals: ``script:<scenario>``)
# from its AppConfig.ready.
FILE_PROVIDERS: dict[str, Callable[[str], Provider]] = {}


def register_file_kind(kind: str, loader: Callable[[str], Provider]) -> None:
    FILE_PROVIDERS[kind] = loader


# A provider kind is one row here and one Provider class; the gateway endpoint's wire
# format for it is endpoint.formats.of_provider.
PROVIDER_KINDS = {
    "openai": ProviderKind(OpenAIProvider, "OPENAI", OPENAI_DEFAULT_BASE_URL, keyless_off_official=True),
    "anthropic": ProviderKind(AnthropicProvider, "ANTHROPIC", ANTHROPIC_DEFAULT_BASE_URL, keyless_off_official=False),
}


@dataclass(frozen=True, slots=True)
class ModelEndpoint:
    """A fallback with its own settings; ``None`` fields come from the environment, the
    key only when the endpoint is the environment's or the official one."""

    spec: str
    api_key: str | None = None
    base_url: str | None = None


def parse_spec(spec: str) -> ModelSpec:
    """``observations.gateway.model_spec.parse_model_spec``, refusing as a provider error."""
    try:
        return parse_model_spec(spec)
    except ModelSpecError as exc:
        raise InvalidModelSpec(str(exc)) from None


def parse_fallbacks(text: str) -> tuple[str, ...]:
    """Comma-separated specs, as an agent profile stores them."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def build_provider(
    spec: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    replay_dir: Path | str | None = None,
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
    env: Mapping[str, str] | None = None,
) -> Provider:
    """One endpoint, no retries: the building block of ``provider_for``."""
    env = os.environ if env is None else env
    parsed = parse_spec(spec)
    if parsed.kind == "replay":
        return ReplayProvider.from_spec(parsed.name, replay_dir=replay_dir)
    if parsed.kind in FILE_KINDS:
        if parsed.kind not in FILE_PROVIDERS:
            raise InvalidModelSpec(f"{parsed} needs the app that plays {parsed.kind}: files")
        return FILE_PROVIDERS[parsed.kind](parsed.name)
    endpoint = upstream_endpoint(parsed, api_key=api_key, base_url=base_url, env=env)
    cls = PROVIDER_KINDS[parsed.kind].provider
    # A profile's own base URL: each connection checked where it goes (DNS rebinding, redirects).
    client = None if endpoint.trusted else checked_client(cls.http_client_class, allowed_from(os.environ))
    return cls(parsed.name, api_key=endpoint.api_key, base_url=endpoint.base_url, timeouts=timeouts,
               environment_headers=endpoint.trusted, http_client=client)


@dataclass(frozen=True, slots=True)
class UpstreamEndpoint:
    """Where an ``openai:`` or ``anthropic:`` model is called, with which key, and whether
    the environment's headers may go there too (``ambient``)."""

    kind: str
    model: str
    base_url: str
    api_key: str
    trusted: bool


def upstream_endpoint(
    parsed: ModelSpec, *, api_key: str | None = None, base_url: str | None = None,
    env: Mapping[str, str] | None = None,
) -> UpstreamEndpoint:
    """The one rule for which key goes to which URL, for the providers and for the
    gateway endpoint (endpoint/upstream.py). Raises InvalidModelSpec when no key
    may be used."""
    env = os.environ if env is None else env
    if base_url:
        _check_profile_url(base_url, env)
    kind = PROVIDER_KINDS.get(parsed.kind)
    if kind is None:
        raise InvalidModelSpec(f"{parsed} is not called over the network")
    url, trusted = _endpoint(base_url, env, prefix=kind.env_prefix, official=kind.official_url)
    variable = f"{kind.env_prefix}_API_KEY"
    key = api_key or (env.get(variable) if trusted else None)
    if not key:
        if kind.keyless_off_official and not _same_url(url, kind.official_url):
            key = NO_KEY
        elif base_url and env.get(variable):
            raise InvalidModelSpec(
                f"{parsed} at {display_url(base_url)} needs the agent's own API key: {variable} is "
                f"only sent to {kind.env_prefix}_BASE_URL or the official endpoint"
            )
        else:
            raise InvalidModelSpec(f"{parsed} needs an API key: set {variable} or the agent's API key")
    return UpstreamEndpoint(parsed.kind, parsed.name, url, key, trusted)


def check_model_spec(
    spec: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    replay_dir: Path | str | None = None,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """Whether a profile's model spec can work, checked when it is saved.

    Raises InvalidModelSpec for what can never work (not a spec; a replay file that is
    missing or unreadable). Returns a warning for what the environment may still fix
    (no API key yet), or None. Builds the provider the way a worker would, without
    calling it.
    """
    parsed = parse_spec(spec)
    try:
        provider = build_provider(spec, api_key=api_key, base_url=base_url, replay_dir=replay_dir, env=env)
    except InvalidModelSpec as exc:
        if parsed.kind in FILE_KINDS:
            raise
        return f"{exc}; sessions of this agent fail until it is set."
    if close := getattr(provider, "close", None):
        close()
    return None


def operator_url(base_url: str, env: Mapping[str, str]) -> bool:
    """Whether ``base_url`` is the operator's own: a provider kind's environment base URL."""
    return any(_same_url(base_url, env.get(f"{kind.env_prefix}_BASE_URL") or "") for kind in PROVIDER_KINDS.values())


def _check_profile_url(base_url: str, env: Mapping[str, str]) -> None:
    """A profile's own base URL leads to the internet (agents/providers/addresses.py),
    unless it is the operator's own (an environment base URL)."""
    if operator_url(base_url, env):
        return
    try:
        check_base_url(base_url, allowed_from(os.environ))  # the operator's, whatever env a caller passes
    except AddressRefused as exc:
        raise InvalidModelSpec(f"the agent's base URL is refused: {exc}") from None


def _endpoint(
    base_url: str | None, env: Mapping[str, str], *, prefix: str, official: str
) -> tuple[str, bool]:
    """The URL to call, and whether the environment's key and headers may go there:
    only to the environment's own base URL or the provider's official endpoint."""
    env_url = env.get(f"{prefix}_BASE_URL") or ""
    url = base_url or env_url or official
    return url, _same_url(url, official) or bool(env_url and _same_url(url, env_url))


def _same_url(a: str, b: str) -> bool:
    """Same endpoint, however the scheme and host are cased or a trailing slash is spelled."""
    return _normal_url(a) == _normal_url(b)


def _normal_url(url: str) -> tuple[str, str, str, str]:
    parts = urlsplit(url.strip())
    return (parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query)


def provider_for(
    spec: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    fallbacks: Iterable[str | ModelEndpoint] = (),
    replay_dir: Path | str | None = None,
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
    policy: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: Callable[[], float] = random.random,
    env: Mapping[str, str] | None = None,
) -> ResilientProvider:
    """The provider the step loop calls: the primary endpoint, then its fallbacks.

    ``api_key`` and ``base_url`` belong to the primary alone. A fallback given as a
    plain spec takes its key and base URL from the environment, so a per-agent key is
    never sent to an endpoint it was not made for; a ``ModelEndpoint`` brings its own,
    under the same rule as the primary (its base URL never receives the environment's
    key).
    """
    chain = [
        build_provider(
            spec,
            api_key=api_key,
            base_url=base_url,
            replay_dir=replay_dir,
            timeouts=timeouts,
            env=env,
        )
    ]
    for fallback in fallbacks:
        endpoint = fallback if isinstance(fallback, ModelEndpoint) else ModelEndpoint(fallback)
        chain.append(
            build_provider(
                endpoint.spec,
                api_key=endpoint.api_key,
                base_url=endpoint.base_url,
                replay_dir=replay_dir,
                timeouts=timeouts,
                env=env,
                )
        )
    return ResilientProvider(chain, policy=policy, sleep=sleep, rng=rng, call_limit=timeouts.call)
