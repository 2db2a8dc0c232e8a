"""The gateway endpoint's own Django handler: the hub's middleware less what serves a
person's browser, each hook run on the event loop.

Every hook of a Django middleware written for sync code (process_request, process_view,
process_response) is sent through a thread under Daphne: a gateway request took 14 such
hops (about 2.8 ms of the event loop's CPU in a profile), its key's look-up and Django's
request signals 3 more. A gateway request is a key and a body: sessions, CSRF, the
login, messages, htmx and the login lockout (django-axes) have nothing to do for it (its
views are CSRF-exempt and need no login). What stays is what every response of the hub
gets: the host checked against ALLOWED_HOSTS, and the security headers (HSTS among them
behind a TLS proxy).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest, HttpResponse
from django.utils.module_loading import import_string

GetResponse = Callable[[HttpRequest], Awaitable[HttpResponse]]

# The paths hub.urls sends to endpoint.urls (listed before every page, and ending in a
# catch-all): nothing else may skip the pages' middleware.
GATEWAY_PATH = re.compile(r"/(?:rooms/[-a-zA-Z0-9_]+/)?v1/")

# Of settings.MIDDLEWARE: what a gateway request leaves out, and the middleware written
# for sync code whose hooks do no I/O, run on the event loop. A gateway request takes
# any other as Django would; one that cannot run under an ASGI handler at all stops the
# hub at startup until it is named in one of the two.
PAGES_ONLY = frozenset({
    "hub.debug.LocalDebugPagesMiddleware",  # its 404 page is a page; the endpoint's 404s are JSON
    "hub.static_files.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",
})
ON_THE_LOOP = frozenset({
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
})


def on_the_loop(middleware: type) -> Callable[[GetResponse], GetResponse]:
    """``middleware``'s hooks called in the event loop, for one whose hooks do no I/O."""

    def factory(get_response: GetResponse) -> GetResponse:
        hooks = middleware(get_response)

        async def middleware_on_the_loop(request: HttpRequest) -> HttpResponse:
            response = hooks.process_request(request) if hasattr(hooks, "process_request") else None
            response = response or await get_response(request)
            if hasattr(hooks, "process_response"):
                response = hooks.process_response(request, response)
            return response

        return middleware_on_the_loop

    return factory


def gateway_middleware() -> list[tuple[str, Callable[[GetResponse], GetResponse]]]:
    """settings.MIDDLEWARE as a gateway request takes it, outermost first."""
    chain = []
    for path in settings.MIDDLEWARE:
        if path in PAGES_ONLY:
            continue
        middleware = import_string(path)
        if path in ON_THE_LOOP:
            chain.append((path, on_the_loop(middleware)))
        elif getattr(middleware, "async_capable", False):
            chain.append((path, middleware))
        else:
            raise ImproperlyConfigured(f"{path} is sync-only: name it in hub.gateway_handler's PAGES_ONLY "
                                       "or, if its hooks do no I/O, in ON_THE_LOOP.")
    return chain


class GatewayHandler(ASGIHandler):
    def load_middleware(self, is_async: bool = False) -> None:
        assert is_async, "the gateway's handler is an ASGI one"
        self._view_middleware, self._template_response_middleware, self._exception_middleware = [], [], []
        handler = convert_exception_to_response(self._get_response_async)
        for _, factory in reversed(gateway_middleware()):
            handler = convert_exception_to_response(factory(handler))
        self._middleware_chain = handler


class ByPath:
    """The ASGI app for HTTP: gateway paths to ``gateway``, every other to ``pages``."""

    def __init__(self, *, gateway: Any, pages: Any) -> None:
        self.gateway, self.pages = gateway, pages

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        path = scope["path"].removeprefix(get_script_prefix(scope))  # Django's path_info
        app = self.gateway if GATEWAY_PATH.match(path) else self.pages
        await app(scope, receive, send)
