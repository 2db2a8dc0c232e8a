"""The gateway endpoint's own handler (hub.gateway_handler): only the endpoint's paths
take it, a request through it crosses to a thread only for its key and Django's own
signals, on a thread an earlier request left, and its responses are checked and headed
like every other of the hub."""

from __future__ import annotations

import asyncio
import threading
import urllib.error
import urllib.request

import pytest
from asgiref.sync import SyncToAsync, async_to_sync, sync_to_async
from asgiref.testing import ApplicationCommunicator
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.asgi import ASGIHandler
from django.core.signals import request_started
from django.urls import resolve

from hub.gateway_handler import (
    GATEWAY_PATH,
    PAGES_ONLY,
    ByPath,
    GatewayHandler,
    RequestThreads,
    gateway_middleware,
)


@pytest.mark.parametrize("path", ["/v1/models", "/v1/chat/completions", "/v1/", "/v1/no/such/path",
                                  "/rooms/room-1/v1/messages", "/rooms/a_b/v1/responses"])
def test_the_endpoints_paths_take_the_gateway_handler_and_reach_only_its_views(path):
    assert GATEWAY_PATH.match(path)
    assert resolve(path).func.__module__ == "endpoint.views.api"


@pytest.mark.parametrize("path", ["/v1", "/rooms/room-1/v1", "/rooms/room-1/", "/login/", "/admin/v1/",
                                  "/rooms/a/b/v1/models", "/rooms/a.b/v1/models", "/rooms//v1/models",
                                  "//v1/models", "/healthz"])
def test_every_other_path_takes_the_pages_handler(path):
    assert not GATEWAY_PATH.match(path)


@pytest.mark.parametrize(("root_path", "forced", "path", "taken"), [
    ("/hub", None, "/hub/v1/models", "gateway"), ("/hub", None, "/hub/login/", "pages"),
    ("/v1", None, "/v1/models", "pages"), ("", "/hub", "/hub/rooms/r/v1/messages", "gateway"),
    ("", "/hub", "/v1/models", "gateway"), ("", "/v1", "/v1/models", "pages")])
def test_a_script_prefix_is_left_out_of_the_path_as_django_leaves_it_out(settings, root_path, forced, path, taken):
    settings.FORCE_SCRIPT_NAME = forced
    called = []

    def app(name):
        async def answer(scope, receive, send):
            called.append(name)
        return answer

    scope = {"type": "http", "path": path, "root_path": root_path}
    async_to_sync(ByPath(gateway=app("gateway"), pages=app("pages")))(scope, None, None)
    assert called == [taken]


class SyncOnly:
    sync_capable, async_capable = True, False

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)


def test_a_gateway_request_takes_the_hubs_middleware_but_what_serves_a_persons_browser(settings):
    taken = [path for path, _ in gateway_middleware()]
    assert taken == [path for path in settings.MIDDLEWARE if path not in PAGES_ONLY] == [
        "django.middleware.security.SecurityMiddleware", "hub.security_headers.content_security_policy",
        "django.middleware.common.CommonMiddleware", "django.middleware.clickjacking.XFrameOptionsMiddleware"]
    # A middleware added to the hub's is a gateway request's too, as Django would run it;
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "django.middleware.gzip.GZipMiddleware"]
    assert [path for path, _ in gateway_middleware()][-1] == "django.middleware.gzip.GZipMiddleware"
    # one that cannot run under an ASGI handler stops the hub until it is named.
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}.SyncOnly"]
    with pytest.raises(ImproperlyConfigured, match="SyncOnly is sync-only"):
        gateway_middleware()


def _get(app, path: str, token: str, host: bytes = b"127.0.0.1") -> tuple[int, dict[bytes, bytes]]:
    return async_to_sync(_exchange)(app, path, token, host)


async def _exchange(app, path: str, token: str, host: bytes = b"127.0.0.1") -> tuple[int, dict[bytes, bytes]]:
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
             "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
             "headers": [(b"host", host), (b"authorization", f"Bearer {token}".encode())],
             "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000)}
    communicator = ApplicationCommunicator(app, scope)
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(20)
    while (await communicator.receive_output(20)).get("more_body"):
        pass
    await communicator.wait(20)
    return start["status"], dict(start["headers"])


def test_a_gateway_request_goes_to_a_thread_only_for_its_key_and_djangos_signals(setup, settings, monkeypatch):
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    hops: list[str] = []
    call = SyncToAsync.__call__

    async def counted(self, *args, **kwargs):
        hops.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await call(self, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "__call__", counted)
    app = ByPath(gateway=GatewayHandler(), pages=ASGIHandler())
    status, _ = _get(app, "/v1/models", setup.openai_key)
    assert status == 200
    # Django's request_started and request_finished (the response's close), the key's look-up.
    assert len(hops) == 3, hops
    # Through the pages' middleware the same request took a thread for every hook.
    hops.clear()
    assert _get(ByPath(gateway=ASGIHandler(), pages=ASGIHandler()), "/v1/models", setup.openai_key)[0] == 200
    assert len(hops) > 10, hops


def test_a_gateway_requests_thread_is_one_an_earlier_request_left(setup, settings):
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    handler = GatewayHandler()
    app = ByPath(gateway=handler, pages=ASGIHandler())
    threads: list[threading.Thread] = []

    def started(**kwargs) -> None:
        threads.append(threading.current_thread())

    async def requests() -> None:  # on one event loop, as a web process serves them
        for _ in range(3):
            assert (await _exchange(app, "/v1/models", setup.openai_key))[0] == 200
            await _until(lambda: len(handler.threads.idle) == 1)

    request_started.connect(started)
    try:
        async_to_sync(requests)()
    finally:
        request_started.disconnect(started)
    # Django's handler started a thread for each request, and another to join it.
    assert len(set(threads)) == 1 and threads[0].name.startswith("gateway-request"), threads


async def _until(condition, seconds: float = 20) -> None:
    for _ in range(int(seconds / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not reached")


def _current_thread() -> threading.Thread:
    return threading.current_thread()


def test_a_request_thread_still_running_a_call_its_request_left_is_not_given_to_the_next():
    threads = RequestThreads(idle_kept=4)
    release, running = threading.Event(), threading.Event()

    def left_running() -> None:
        running.set()
        release.wait(20)

    async def scenario() -> tuple[threading.Thread, threading.Thread]:
        async with threads.context():  # a request whose client left while its call ran
            first = await sync_to_async(_current_thread)()
            task = asyncio.ensure_future(sync_to_async(left_running)())
            await asyncio.to_thread(running.wait, 20)
            task.cancel()
        async with threads.context():  # the next request is not queued behind that call
            second = await asyncio.wait_for(sync_to_async(_current_thread)(), 20)
        await _until(lambda: len(threads.idle) == 1)  # the second request's thread
        await asyncio.sleep(0.2)
        assert len(threads.idle) == 1  # the first's is busy
        release.set()
        await _until(lambda: len(threads.idle) == 2)
        return first, second

    first, second = async_to_sync(scenario)()
    assert first is not second and first.is_alive() and second.is_alive()


def test_request_threads_past_those_kept_idle_end():
    threads = RequestThreads(idle_kept=1)
    used: list[threading.Thread] = []

    async def request() -> None:
        async with threads.context():
            used.append(await sync_to_async(_current_thread)())
            await asyncio.sleep(0.2)  # both requests at once: two threads

    async def scenario() -> None:
        await asyncio.gather(request(), request())
        await _until(lambda: len(threads.idle) == 1 and sum(t.is_alive() for t in used) == 1)

    async_to_sync(scenario)()
    assert len(set(used)) == 2


def test_a_gateway_request_with_a_host_the_hub_does_not_serve_is_refused(setup, settings):
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    app = ByPath(gateway=GatewayHandler(), pages=ASGIHandler())
    assert _get(app, "/v1/models", setup.openai_key, host=b"attacker.example")[0] == 400


def test_gateway_responses_under_daphne_carry_the_hubs_headers_and_no_cookie(setup, hub):
    for path in ("/v1/models", f"/rooms/{setup.room.slug}/v1/models"):
        request = urllib.request.Request(hub.url + path, headers={"Authorization": f"Bearer {setup.openai_key}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
            headers = response.headers
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["X-Frame-Options"] == "DENY"
        assert headers["Referrer-Policy"] == "same-origin"
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        assert "Set-Cookie" not in headers and "Cookie" not in (headers["Vary"] or "")
    # A page beside it still takes the pages' middleware: no login, no room.
    opener = urllib.request.build_opener(_NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as answer:
        opener.open(f"{hub.url}/rooms/{setup.room.slug}/", timeout=30)
    assert answer.value.code == 302 and answer.value.headers["Location"].startswith("/login/")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None
