"""The Content-Security-Policy of every page: scripts only from the hub's own static
files, so an injected ``<script>`` or ``onclick=`` never runs (htmx, which could
evaluate attributes, is configured with ``allowEval`` off in base.html). Styles may be
inline: the token gauge positions its marks with style attributes. Pages may not be
framed, and forms and websockets reach the hub's own origin only."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

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


def content_security_policy(get_response: Callable[[HttpRequest], HttpResponse]):
    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response

    return middleware
