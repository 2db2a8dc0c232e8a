"""Ids the database cannot hold are a 404, never a 500; Django's debug pages reach no one
but a developer at the hub's own machine."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.decorators import login_not_required
from django.test import AsyncClient, Client
from django.urls import path

from tests.rooms.factories import make_room, make_user

pytestmark = pytest.mark.django_db


@login_not_required
def boom(request):
    raise RuntimeError("SECRET-IN-TRACEBACK")


urlpatterns = [path("boom/", boom)]


@pytest.fixture
def owner_client():
    owner = make_user("owner")
    room = make_room(owner)
    client = Client()
    client.force_login(owner)
    return client, room


@pytest.mark.parametrize("number", ["9223372036854775808", "18446744073709551616", "99999999999999999999999",
                                    "0", "9223372036854775807"])
@pytest.mark.parametrize("url", ["/rooms/{slug}/members/{n}/remove/", "/rooms/{slug}/agents/{n}/remove/",
                                 "/sessions/{n}/", "/sessions/{n}/approvals/{n}/", "/tasks/{n}/intent/",
                                 "/agents/{n}/edit/", "/rooms/{slug}/settings/rules/{n}/remove/"])
def test_out_of_range_ids_are_not_found_not_a_server_error(owner_client, url, number, settings):
    settings.DEBUG = False
    client, room = owner_client
    response = client.post(url.format(slug=room.slug, n=number))
    if number == "9223372036854775807":  # the largest id: a real lookup that finds nothing
        assert response.status_code in (200, 302, 404, 405)
    else:
        assert response.status_code == 404
    assert b"Traceback" not in response.content


@pytest.mark.urls("tests.security.test_http_edges")
def test_a_remote_visitor_never_sees_a_traceback_even_with_debug_on(settings):
    settings.DEBUG = True
    remote = Client(raise_request_exception=False, REMOTE_ADDR="203.0.113.9")
    response = remote.get("/boom/")
    assert response.status_code == 500
    assert b"SECRET-IN-TRACEBACK" not in response.content and b"Traceback" not in response.content
    text = remote.get("/boom/", HTTP_ACCEPT="text/plain")
    assert b"SECRET-IN-TRACEBACK" not in text.content
    local = Client(raise_request_exception=False, REMOTE_ADDR="127.0.0.1")
    assert b"SECRET-IN-TRACEBACK" in local.get("/boom/").content  # the developer at the machine


def test_a_remote_visitor_gets_the_plain_not_found_page_with_debug_on(settings):
    settings.DEBUG = True
    user = make_user("visitor")
    remote = Client(REMOTE_ADDR="203.0.113.9")
    remote.force_login(user)
    page = remote.get("/no/such/page/")
    assert page.status_code == 404
    assert b"URLconf" not in page.content and b"DEBUG = True" not in page.content
    assert b"Not found" in page.content
    missing_room = remote.get("/rooms/someone-elses/")
    assert missing_room.status_code == 404 and b"DEBUG = True" not in missing_room.content
    local = Client(REMOTE_ADDR="127.0.0.1")
    local.force_login(user)
    assert b"DEBUG = True" in local.get("/no/such/page/").content


class AsyncClientAt(AsyncClient):
    """Django's async test client from another address than 127.0.0.1."""

    def __init__(self, address: str) -> None:
        super().__init__()
        self.address = address

    def _base_scope(self, **request):
        return {**super()._base_scope(**request), "client": [self.address, 0]}


@pytest.mark.django_db(transaction=True)
def test_under_asgi_too_a_remote_visitor_gets_the_plain_not_found_page(settings):
    """Daphne runs the middlewares async: the plain page (which reads the visitor's
    session and user) is made off the event loop."""
    settings.DEBUG = True
    user = make_user("visitor")

    async def visit(address: str):
        client = AsyncClientAt(address)
        await client.aforce_login(user)
        return await client.get("/no/such/page/")

    page = async_to_sync(visit)("203.0.113.9")
    assert page.status_code == 404
    assert b"URLconf" not in page.content and b"DEBUG = True" not in page.content and b"Not found" in page.content
    assert b"DEBUG = True" in async_to_sync(visit)("127.0.0.1").content
