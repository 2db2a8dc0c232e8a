"""The endpoint's views: async under Daphne, thin. Each reads the key, checks the body,
calls ``upstream.relay`` and answers in the client's format; nothing else. A request
never gets a Django error page or a traceback: every failure is a provider-shaped
error body (``WireFormat.error_body``).

The same views answer at ``/v1/...`` (the key names its room) and at
``/rooms/<slug>/v1/...`` (the key must also be that room's, or it is refused like a
bad key).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any

from channels.db import DatabaseSyncToAsync
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import (
    HttpRequest,
    HttpResponse,
    JsonResponse,
    StreamingHttpResponse,
    UnreadablePostError,
)
from django.views.decorators.csrf import csrf_exempt

from endpoint import in_flight, params, upstream, wire
from endpoint.conversation import SESSION_HEADER, conversation_key
from endpoint.formats import DEFAULT_FORMAT, FORMATS
from endpoint.keys import gateway_key_lookup
from endpoint.models import GatewayKey
from endpoint.sessions import proxied_turn
from endpoint.streaming import turn_answer
from endpoint.wire import Format, WireError
from observations.gateway.messages import Params
from observations.gateway.tokens import estimate_request

log = logging.getLogger(__name__)

# A thread of the endpoint's own pool (an upstream call must not hold up other requests)
# and a connection closed when done, like every database call of a consumer.
_proxied_turn = DatabaseSyncToAsync(proxied_turn, thread_sensitive=False, executor=upstream.UPSTREAM_THREADS)

View = Callable[..., Awaitable[HttpResponse]]


def _endpoint(fmt: Format | None, methods: tuple[str, ...]) -> Callable[[View], View]:
    """An endpoint view: no login or CSRF (a key authenticates), only ``methods``, the
    key looked up (a 401 without a live one), and every failure said in the client's
    format. ``fmt`` None: the format follows the request's headers (``/v1/models``)."""

    def decorate(view: View) -> View:
        @csrf_exempt
        @login_not_required
        @wraps(view)
        async def wrapper(request: HttpRequest, slug: str | None = None) -> HttpResponse:
            client_format = fmt or _format_of(request)
            try:
                if request.method not in methods:
                    raise WireError(f"{request.method} is not allowed here; use {' or '.join(methods)}.",
                                    status=405, kind="invalid_request_error")
                if upstream.HOP_HEADER in request.headers:
                    # An agent profile that points at this gateway would call it again and again.
                    raise WireError("This request came from an Atrium gateway: an agent profile points at a "
                                    "gateway endpoint, which would call itself.", status=508, kind="api_error")
                key = await gateway_key_lookup(_token(request, client_format), room_slug=slug)
                if key is None:
                    raise wire.unauthorized()
                return await view(request, key, client_format)
            except WireError as exc:
                return error_response(client_format, exc)
            except Exception:
                log.exception("gateway endpoint: %s %s failed", request.method, request.path)
                return error_response(client_format, WireError("The gateway failed to handle this request.",
                                                               status=500, kind="api_error"))

        return wrapper

    return decorate


def error_response(fmt: Format, error: WireError) -> JsonResponse:
    response = JsonResponse(FORMATS[fmt].error_body(error), status=error.status)
    for name, value in error.headers.items():
        response[name] = value
    if error.retry_after is not None:
        # Both SDKs read retry-after-ms first; Retry-After is whole seconds, rounded up so
        # that no client comes back sooner than it was asked to.
        response["retry-after-ms"] = str(max(0, round(error.retry_after * 1000)))
        response["Retry-After"] = str(max(0, math.ceil(error.retry_after)))
    if (challenge := FORMATS[fmt].challenge) and error.status == 401:
        response["WWW-Authenticate"] = challenge
    return response


def _format_of(request: HttpRequest) -> Format:
    headers = request.headers
    return next((name for name, wire_format in FORMATS.items()
                 if any(header in headers for header in wire_format.claiming_headers)), DEFAULT_FORMAT)


def _token(request: HttpRequest, fmt: Format) -> str | None:
    """The key as either SDK sends it: ``x-api-key`` (Anthropic) or ``Authorization:
    Bearer`` (OpenAI, and Anthropic's ``auth_token``); the client's own format first."""
    api_key = request.headers.get("x-api-key")
    scheme, _, bearer = (request.headers.get("authorization") or "").partition(" ")
    bearer = bearer.strip() if scheme.lower() == "bearer" else ""
    ordered = (bearer, api_key) if FORMATS[fmt].bearer_first else (api_key, bearer)
    return next((token.strip() for token in ordered if token and token.strip()), None)


@_endpoint(None, ("GET",))
async def models(request: HttpRequest, key: GatewayKey, fmt: Format) -> HttpResponse:
    """The one model the key reaches: its agent profile's (the model name a client
    sends is replaced by it anyway)."""
    spec = key.agent.model
    name = spec.partition(":")[2] or spec
    return JsonResponse(FORMATS[fmt].models(name, created=int(key.agent.created_at.timestamp())))


@_endpoint("openai", ("POST",))
async def chat_completions(request: HttpRequest, key: GatewayKey, fmt: Format) -> HttpResponse:
    return await _relay(request, key, "openai", _checked_body(request, "openai"))


@_endpoint("anthropic", ("POST",))
async def messages(request: HttpRequest, key: GatewayKey, fmt: Format) -> HttpResponse:
    return await _relay(request, key, "anthropic", _checked_body(request, "anthropic"))


@_endpoint("anthropic", ("POST",))
async def count_tokens(request: HttpRequest, key: GatewayKey, fmt: Format) -> HttpResponse:
    """Anthropic's ``/v1/messages/count_tokens``: the request's tokens by the gateway's
    own estimate (what the session sends upstream is its own, folded, and no larger)."""
    body = {"max_tokens": 1, **wire.parse_body(_body(request))}  # a count takes no max_tokens
    FORMATS["anthropic"].check(body)
    return JsonResponse({"input_tokens": estimate_request(FORMATS["anthropic"].request(body, body["model"]))})


@_endpoint("responses", ("POST",))
async def responses(request: HttpRequest, key: GatewayKey, fmt: Format) -> HttpResponse:
    return await _relay(request, key, "responses", _checked_body(request, "responses"))


def _checked_body(request: HttpRequest, fmt: Format) -> dict[str, Any]:
    body = wire.parse_body(_body(request))
    FORMATS[fmt].check(body)
    return body


def _body(request: HttpRequest) -> bytes:
    """The raw body, up to the endpoint's own limit: an agent's history is easily larger
    than Django's form-data limit (``DATA_UPLOAD_MAX_MEMORY_SIZE``, which ``request.body``
    applies), and the limit that matters here is the providers' (``wire.MAX_BODY_BYTES``)."""
    try:
        return request.read(wire.MAX_BODY_BYTES + 1)
    except UnreadablePostError:
        raise WireError("The request body could not be read.") from None


async def _relay(request: HttpRequest, key: GatewayKey, fmt: Format, body: dict[str, Any]) -> HttpResponse:
    release = in_flight.claim(key.pk, settings.ATRIUM_GATEWAY_KEY_CONCURRENCY)
    try:
        answer = await _answer(request, key, fmt, body)
    except BaseException:
        release()
        raise
    if answer.stream is not None:
        response: HttpResponse = StreamingHttpResponse(in_flight.releasing(answer.stream, release),
                                                       status=answer.status)
        # A stream the client left before it started runs no finally: closing gives it back too.
        response._resource_closers.append(release)
        if answer.on_close is not None:
            response._resource_closers.append(answer.on_close)
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # a proxy in front must not hold events back
    else:
        release()
        response = HttpResponse(answer.content, status=answer.status)
    for name, value in answer.headers.items():
        response[name] = value
    return response


async def _answer(request: HttpRequest, key: GatewayKey, fmt: Format, body: dict[str, Any]) -> upstream.Relay:
    endpoint = upstream.profile_endpoint(key.agent)
    started = time.monotonic()
    if not settings.ATRIUM_GATEWAY_SESSIONS and endpoint.kind == fmt:
        answer = await upstream.relay(endpoint, fmt, body, request.headers)
    else:
        # The gateway makes the upstream call itself: each parameter is carried or refused
        # before anything is fed to a session or sent.
        decision = params.decide(fmt, body, upstream=endpoint.kind, headers=request.headers, model=key.agent.model)
        if settings.ATRIUM_GATEWAY_SESSIONS:
            answer = await _session_turn(request, key, fmt, body, decision.params)
        else:
            model = key.agent.model.partition(":")[2]
            neutral = FORMATS[fmt].request(body, model, decision.params)
            answer = await turn_answer(fmt, model, body, upstream.translated(key.agent, neutral))
        if decision.ignored:
            answer.headers[params.IGNORED_HEADER] = ", ".join(decision.ignored)
    log.info("gateway endpoint: key %s (room %s) %s → %s in %.0f ms", key.pk, key.room_id, fmt, answer.status,
             (time.monotonic() - started) * 1000)
    return answer


async def _session_turn(request: HttpRequest, key: GatewayKey, fmt: Format, body: dict[str, Any],
                        client_params: Params) -> upstream.Relay:
    """The request as one unit of its conversation's session (``sessions.proxied_turn``,
    in a worker thread with its own connection), the turn in the client's format: what
    the gateway sent upstream is its own; the client keeps its history as it wrote it."""
    model = key.agent.model.partition(":")[2]
    wire_format = FORMATS[fmt]
    neutral = wire_format.request(body, model, client_params)
    conversation = conversation_key(key.pk, neutral, request.headers.get(SESSION_HEADER),
                                    wire_format.conversation_id(body, request.headers))
    return await turn_answer(fmt, model, body, lambda on_delta: _proxied_turn(
        key=key, conversation=conversation, request=neutral, on_delta=on_delta))


@csrf_exempt
@login_not_required
async def not_found(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    return error_response(_format_of(request), WireError(
        f"No such endpoint: {request.method} {request.path}. The gateway serves /v1/models, "
        "/v1/chat/completions, /v1/responses, /v1/messages and /v1/messages/count_tokens.", status=404, kind="not_found_error"))

