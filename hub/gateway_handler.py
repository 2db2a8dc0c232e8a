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

Django's handler also gives each request a thread of its own for its thread-sensitive
calls, started on the request's first call and joined by another thread started when it
ends: two threads started per request, the event loop waiting for each to start. The
gateway's handler keeps them for the next request (``RequestThreads``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from asgiref.sync import ThreadSensitiveContext
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


class RequestThreads:
    """One thread for each request's thread-sensitive calls (Django's request signals,
    the key's look-up, the response's close: one at a time, on one thread, as Django's
    handler runs them), kept for a later request once the request has ended; at most
    ``idle_kept`` idle threads are kept, the rest end."""

    def __init__(self, idle_kept: int) -> None:
        self.idle: list[ThreadPoolExecutor] = []
        self.idle_kept = idle_kept

    @asynccontextmanager
    async def context(self) -> AsyncIterator[None]:
        executor = self.idle.pop() if self.idle else ThreadPoolExecutor(1, thread_name_prefix="gateway-request")
        try:
            async with ThreadSensitiveContext(executor=executor):
                yield
        finally:
            # Idle only once whatever the request left queued has run (a call it stopped
            # awaiting when its client left): the next request must not wait behind it.
            loop = asyncio.get_running_loop()
            executor.submit(_nothing).add_done_callback(lambda _: self._ended(executor, loop))

    def _ended(self, executor: ThreadPoolExecutor, loop: asyncio.AbstractEventLoop) -> None:
        try:
            loop.call_soon_threadsafe(self._keep, executor)
        except RuntimeError:  # the loop is closed: the process is stopping
            executor.shutdown(wait=False)

    def _keep(self, executor: ThreadPoolExecutor) -> None:
        if len(self.idle) < self.idle_kept:
            self.idle.append(executor)
        else:
            executor.shutdown(wait=False)


def _nothing() -> None:
    pass


class GatewayHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self.threads = RequestThreads(idle_kept=settings.ATRIUM_GATEWAY_THREADS)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        async with self.threads.context():  # for ASGIHandler's ThreadSensitiveContext()
            await self.handle(scope, receive, send)

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
