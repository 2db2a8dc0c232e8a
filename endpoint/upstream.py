"""The upstream call: the client's request, sent to its key's agent profile through
the official SDK of the profile's provider, and its answer relayed as it comes.

A client that speaks the profile's provider's format is passed through (``relay``):
the model the client names is replaced by the profile's, every other field goes as the
client wrote it, and the answer comes back byte for byte, streamed as it arrives. A
client of the other format is translated (``translated``, ``endpoint.formats``): its request
goes through the profile's own provider as a neutral Request and the turn comes back
in the client's format. The SDKs' own retries are off: a rate limit or an upstream 5xx
reaches the client with its retry headers, and the client's SDK retries as it would
against the provider itself.

The key routing rule is the providers' (``agents.providers.factory.upstream_endpoint``):
the hub's environment key only goes to the environment's or the official URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from agents.models import AgentProfile
from agents.providers.addresses import allowed_from
from agents.providers.ambient import withheld_headers
from agents.providers.base import DeltaSink
from agents.providers.checked_http import checked_client
from agents.providers.errors import (
    ConnectionFailed,
    ContextOverflow,
    InvalidModelSpec,
    ProviderError,
    Transient,
    display_url,
    redact,
)
from agents.providers.factory import (
    UpstreamEndpoint,
    build_provider,
    parse_spec,
    upstream_endpoint,
)
from endpoint.cache import BoundedCache
from endpoint.formats import FORMATS
from endpoint.wire import Format, WireError
from observations.gateway.messages import ModelTurn, Request
from observations.gateway.model_spec import REMOTE_KINDS, ModelSpec

log = logging.getLogger(__name__)

# The upstream calls the gateway makes itself (a session's unit, a translated request)
# each hold a thread for as long as the model takes: a pool of their own. On the event
# loop's default pool (CPU count + 4 threads) a 2-core hub's seventh request waited for
# one of the first six to be answered.
UPSTREAM_THREADS = ThreadPoolExecutor(max_workers=settings.ATRIUM_GATEWAY_THREADS, thread_name_prefix="gateway")

# What a relayed request may take; the client's own SDK bounds its wait too.
RELAY_TIMEOUT_SECONDS = 600.0

# Upstream response headers a client may act on: retries, rate limits, request ids.
RELAYED_HEADERS = ("retry-after", "retry-after-ms", "request-id", "x-request-id")
RELAYED_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")
# Sent upstream on every pass-through; a request that carries it is refused (views).
HOP_HEADER = "X-Atrium-Gateway-Hop"
GATEWAY_KEY_PREFIX = "atr-gw-"  # endpoint.keys.TOKEN_PREFIX


# The upstream call, given where to send the turn's pieces (None: it is not streamed).
TurnCall = Callable[[DeltaSink | None], Awaitable[ModelTurn]]


@dataclass
class Relay:
    """An upstream answer for the view: status, headers to pass on, and the body, whole
    (``content``) or as a stream of bytes (``stream``) that closes the upstream when it ends."""

    status: int
    headers: dict[str, str]
    content: bytes = b""
    stream: AsyncIterator[bytes] | None = None
    on_close: Callable[[], None] | None = None  # also run when the stream is closed before it started


def profile_endpoint(profile: AgentProfile) -> UpstreamEndpoint:
    """Where the profile's model is called; a 400 for a profile whose model is not
    called over the network (``replay:``), a 502 for one that has no usable key (the
    gateway has no upstream it may call: the client's own key is fine)."""
    try:
        parsed: ModelSpec = parse_spec(profile.model)
    except InvalidModelSpec:
        raise WireError(f"The agent {profile.name!r} has no valid model spec.") from None
    if parsed.kind not in REMOTE_KINDS:
        raise WireError(f"This key's agent {profile.name!r} runs {parsed}, which is played inside the hub, not "
                        "called over the network; the gateway endpoint serves openai: and anthropic: agents.",
                        param="model")
    if profile.api_key.startswith(GATEWAY_KEY_PREFIX):
        raise WireError(f"The agent {profile.name!r} has a gateway key as its provider key: it would call the "
                        "gateway itself. A person in the room must give it its provider's key.", status=502,
                        kind="api_error")
    try:
        return upstream_endpoint(parsed, api_key=profile.api_key or None, base_url=profile.base_url or None)
    except InvalidModelSpec as exc:
        raise WireError(f"The agent {profile.name!r} cannot reach its model: {exc}", status=502,
                        kind="api_error") from None


def translated(profile: AgentProfile, request: Request) -> TurnCall:
    """The call for a client of the other format: its request, made neutral with its
    settings (``endpoint.params``), sent through the profile's own provider (the same
    call a session makes, SDK retries off); ``endpoint.streaming`` answers with the turn
    in the client's format."""

    async def call(on_delta: DeltaSink | None) -> ModelTurn:
        try:
            return await sync_to_async(_complete, thread_sensitive=False, executor=UPSTREAM_THREADS)(
                profile, request, on_delta)
        except ProviderError as exc:
            raise provider_failure(exc, trusted=profile_endpoint(profile).trusted) from None

    return call


def _complete(profile: AgentProfile, request: Request, on_delta: DeltaSink | None) -> ModelTurn:
    """One call of the profile's provider, in a worker thread: building the sync SDK
    client and waiting for it would hold up the event loop."""
    provider = build_provider(profile.model, api_key=profile.api_key or None, base_url=profile.base_url or None,
                              timeouts=profile.timeouts)
    try:
        return provider.complete(request, on_delta=on_delta) if on_delta else provider.complete(request)
    finally:
        if close := getattr(provider, "close", None):
            close()


async def replayed(events: list[bytes]) -> AsyncIterator[bytes]:
    for event in events:
        yield event


def provider_failure(exc: ProviderError, *, trusted: bool) -> WireError:
    """A provider's classified failure, in the words of the client's format. From a
    profile's own base URL (not ``trusted``) only the status and the kind of failure are
    said, never the upstream's words, which could be another service's page."""
    said = exc.message if trusted else f"the agent's upstream answered {exc.status or 'nothing usable'}"
    if isinstance(exc, ContextOverflow):
        return WireError(f"The request is longer than the model's context window: {said}",
                         code="context_length_exceeded")
    if isinstance(exc, Transient):
        status = exc.status or 504
        kind = "rate_limit_error" if status == 429 else "overloaded_error" if status == 529 else "api_error"
        error = WireError(said, status=status, kind=kind)
        error.retry_after = exc.retry_after
        return error
    if isinstance(exc, ConnectionFailed) or exc.status in (401, 403) or exc.status is None:
        return WireError(exc.message if trusted or isinstance(exc, ConnectionFailed) else said, status=502,
                         kind="api_error")
    return WireError(said, status=exc.status if 400 <= exc.status < 500 else 502,
                     kind="invalid_request_error" if exc.status < 500 else "api_error")


# SDK clients by endpoint, per event loop (an async client belongs to the loop it was
# first used on; one dropped on that loop is closed there).
def _close_on_its_loop(client: Any) -> None:
    loop = asyncio.get_running_loop()
    if getattr(client, "_atrium_loop", None) is loop:
        loop.create_task(client.close())


_CLIENTS: BoundedCache[Any] = BoundedCache(64, on_drop=_close_on_its_loop)


def _client(endpoint: UpstreamEndpoint, fmt: Format) -> Any:
    loop = asyncio.get_running_loop()

    def make() -> Any:
        wire_format = FORMATS[fmt]
        headers = None
        if not endpoint.trusted:
            headers = withheld_headers(f"{fmt.upper()}_CUSTOM_HEADERS", api_key=endpoint.api_key,
                                       omit=wire_format.sdk.Omit(), also=wire_format.withheld_also)
        # A profile's own base URL: each connection checked where it goes (DNS rebinding, redirects).
        http_client = None if endpoint.trusted else checked_client(wire_format.sdk.DefaultAsyncHttpxClient,
                                                                   allowed_from(os.environ))
        client = wire_format.async_client_class()(api_key=endpoint.api_key, base_url=endpoint.base_url,
                                                  timeout=RELAY_TIMEOUT_SECONDS, max_retries=0, default_headers=headers,
                                                  http_client=http_client)
        client._atrium_loop = loop
        return client

    # A loop's id can be reused by a later loop: a client is usable on its own loop only.
    return _CLIENTS.get((id(loop), fmt, endpoint.base_url, endpoint.api_key, endpoint.trusted), make,
                        usable=lambda client: getattr(client, "_atrium_loop", None) is loop)


async def relay(endpoint: UpstreamEndpoint, fmt: Format, body: dict[str, Any],
                request_headers: Mapping[str, str]) -> Relay:
    """Send ``body`` upstream; return its answer (an upstream error included, as the
    upstream said it) or raise WireError for what the client should hear from us."""
    client = _client(endpoint, fmt)
    wire_format = FORMATS[fmt]
    stack = contextlib.AsyncExitStack()
    streaming = body.get("stream") is True
    extra_headers = {name: request_headers[name] for name in wire_format.forwarded_headers if name in request_headers}
    extra_headers[HOP_HEADER] = "1"
    try:
        call = wire_format.relay_call(client, model=endpoint.model, body=body, extra_headers=extra_headers,
                                      timeout=RELAY_TIMEOUT_SECONDS)
        response = await stack.enter_async_context(call)
        headers = _relayed(response.headers)
        headers["Content-Type"] = response.headers.get("content-type", "application/json")
        if streaming:
            if not endpoint.trusted and not headers["Content-Type"].startswith("text/event-stream"):
                raise NotTheProvider(fmt)
            return Relay(response.status_code, headers, stream=_stream(response, stack, endpoint, fmt))
        content = await response.read()
    except BaseException as exc:
        await stack.aclose()
        if isinstance(exc, Exception):
            return _failure(exc, endpoint, fmt)
        raise
    await stack.aclose()
    if not endpoint.trusted and not _provider_shaped(fmt, content):
        return _failure(NotTheProvider(fmt), endpoint, fmt)
    return Relay(response.status_code, headers, content=content)


class NotTheProvider(Exception):
    """A profile's own base URL answered with something that is not the provider's
    answer: not relayed, so the endpoint cannot be used to read other services."""

    def __init__(self, fmt: Format) -> None:
        super().__init__(f"The upstream's answer is not a {fmt} response.")


def _provider_shaped(fmt: Format, content: bytes) -> bool:
    try:
        answer = json.loads(content)
    except ValueError:
        return False
    return isinstance(answer, dict) and FORMATS[fmt].answer_shaped(answer)


async def _stream(response: Any, stack: contextlib.AsyncExitStack, endpoint: UpstreamEndpoint,
                  fmt: Format) -> AsyncIterator[bytes]:
    """The upstream's events as they arrive; a failure half-way ends the stream with an
    error event the client's SDK raises from. Closing (the client went away) closes the
    upstream response."""
    try:
        async for chunk in response.iter_bytes():
            yield chunk
    except Exception as exc:  # headers are out: the error can only be an event now
        log.warning("gateway endpoint: upstream stream of %s failed: %s", display_url(endpoint.base_url),
                    type(exc).__name__)
        yield FORMATS[fmt].sse_error(WireError("The upstream stream broke off: " + _reason(exc, endpoint), status=502,
                                       kind="api_error"))
    finally:
        await stack.aclose()


def _failure(exc: Exception, endpoint: UpstreamEndpoint, fmt: Format) -> Relay:
    sdk: Any = FORMATS[fmt].sdk
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        if status in (401, 403):
            # The profile's key, not the client's: a 401 would tell the client its
            # gateway key is bad.
            raise WireError(f"The upstream refused the agent's own key ({status}); a person in the room must "
                            "fix the agent profile's API key.", status=502, kind="api_error") from None
        headers = _relayed(exc.response.headers)
        if not endpoint.trusted:
            # A profile's own URL: its error only in the provider's error shape, rebuilt
            # from its known fields; never another service's page.
            error = _provider_error(fmt, exc.response.text, endpoint.api_key)
            if error is None:
                raise WireError(f"The agent's upstream answered {status}, not as the provider does; nothing of "
                                "its answer is passed on.", status=502, kind="api_error") from None
            headers["Content-Type"] = "application/json"
            return Relay(status, headers, content=json.dumps(error).encode())
        headers["Content-Type"] = exc.response.headers.get("content-type", "application/json")
        return Relay(status, headers, content=redact(exc.response.text, [endpoint.api_key]).encode())
    if isinstance(exc, NotTheProvider):
        raise WireError(f"The agent's upstream at {display_url(endpoint.base_url)} did not answer as the provider "
                        "does; nothing of its answer is passed on.", status=502, kind="api_error") from None
    if isinstance(exc, sdk.APITimeoutError):
        raise WireError(f"The upstream did not answer within {RELAY_TIMEOUT_SECONDS:g} s.", status=504,
                        kind="api_error") from None
    if isinstance(exc, sdk.APIConnectionError):
        raise WireError(f"Cannot reach the upstream at {display_url(endpoint.base_url)}.", status=502,
                        kind="api_error") from None
    log.exception("gateway endpoint: upstream call failed")
    raise WireError("The upstream call failed: " + _reason(exc, endpoint), status=502, kind="api_error") from None


def _provider_error(fmt: Format, text: str, api_key: str) -> dict[str, Any] | None:
    """A provider-shaped error body rebuilt from its known fields (bounded, the key
    redacted); None when ``text`` is not one."""
    try:
        error = json.loads(text).get("error")
    except (ValueError, AttributeError):
        return None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        return None
    fields = {name: redact(value[:500], [api_key]) for name in ("message", "type", "code", "param")
              if isinstance(value := error.get(name), str)}
    return FORMATS[fmt].rebuilt_error(fields)


def _reason(exc: Exception, endpoint: UpstreamEndpoint) -> str:
    return redact(type(exc).__name__, [endpoint.api_key])


def _relayed(headers: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in headers.items()
            if name.lower() in RELAYED_HEADERS or name.lower().startswith(RELAYED_PREFIXES)}
