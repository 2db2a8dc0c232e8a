from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.rooms.factories import make_user

pytestmark = pytest.mark.django_db


def test_the_login_page_is_open_and_logging_in_leads_to_the_room_list():
    make_user("ann", password="a long enough password")
    client = Client()
    page = client.get(reverse("login"))
    assert page.status_code == 200
    assert b'name="password"' in page.content
    response = client.post(reverse("login"), {"username": "ann", "password": "a long enough password"})
    assert response.status_code == 302
    assert response["Location"] == reverse("room_list")
    assert client.get(reverse("room_list")).status_code == 200


def test_a_wrong_password_stays_on_the_login_page_with_an_error():
    make_user("ann", password="a long enough password")
    response = Client().post(reverse("login"), {"username": "ann", "password": "nope"})
    assert response.status_code == 200
    assert b'role="alert"' in response.content


def test_logging_out_needs_a_post_and_ends_the_session():
    client = Client()
    client.force_login(make_user())
    assert b'action="/logout/"' in client.get(reverse("room_list")).content
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert client.get(reverse("room_list")).status_code == 302


def test_every_page_but_login_and_healthz_redirects_anonymous_visitors():
    client = Client()
    for url in (reverse("room_list"), reverse("agents:list"), reverse("agents:create"), "/rooms/anything/"):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"] == f"{reverse('login')}?next={url}"


def test_static_files_the_pages_use_are_found():
    from django.contrib.staticfiles import finders

    for path in ("hub/htmx-2.0.11.min.js", "hub/atrium.css", "rooms/room.js"):
        assert finders.find(path), path
