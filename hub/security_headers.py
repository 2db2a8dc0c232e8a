"""The Content-Security-Policy of every page: scripts only from the hub's own static
files, so an injected ``<script>`` or ``onclick=`` never runs (htmx, which could
evaluate attributes, is configured with ``allowEval`` off in base.html). Styles may be
inline: the token gauge positions its marks with style attributes. Pages may not be
framed, and forms and websockets reach the hub's own origin only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import sync_and_async_middleware

CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "object-src 'none'",
])


@sync_and_async_middleware
def content_security_policy(get_response: Callable[[HttpRequest], Any]):
    # Async under Daphne: a sync middleware would send every request through a thread.
    if iscoroutinefunction(get_response):
        async def middleware(request: HttpRequest) -> HttpResponse:
            response = await get_response(request)
            response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
            return response
    else:
        def middleware(request: HttpRequest) -> HttpResponse:
            response = get_response(request)
            response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
            return response

    return middleware
