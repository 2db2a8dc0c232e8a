"""Issue 24, the web edge: 40 wrong passwords in 56 s met no resistance, pages had no CSP
(htmx evaluating attributes as code) and no HSTS. Now a username is locked out from an
address after a few wrong passwords (django-axes), pages say where scripts may come
from, htmx evaluates nothing, and HTTPS responses carry HSTS."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.rooms.factories import make_user

pytestmark = pytest.mark.django_db


def _login(client: Client, username: str, password: str, address: str = "198.51.100.7"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def test_wrong_passwords_lock_the_username_out_from_that_address(settings):
    make_user("victim", password="the-right-password")
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _login(client, "victim", "guess").status_code == 200  # the form again, with its error
    assert _login(client, "victim", "guess").status_code == 429
    # Locked: even the right password is refused from there, for the cool-off time.
    locked = _login(client, "victim", "the-right-password")
    assert locked.status_code == 429 and "_auth_user_id" not in client.session
    # The person, from their own address, still gets in.
    assert _login(Client(), "victim", "the-right-password", address="203.0.113.9").status_code == 302


def test_a_right_password_before_the_limit_resets_the_count(settings):
    make_user("person", password="pw-of-the-person")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _login(Client(), "person", "guess")
    assert _login(Client(), "person", "pw-of-the-person").status_code == 302
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert _login(Client(), "person", "guess").status_code == 200


def test_pages_carry_a_policy_that_runs_only_the_hubs_own_scripts_and_htmx_evaluates_nothing():
    response = Client().get("/login/")
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("script-src", 1)[1].split(";")[0]
    assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy
    assert '"allowEval": false' in response.content.decode()


def test_https_responses_carry_hsts_behind_a_tls_proxy(settings):
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    secure = Client().get("/login/", HTTP_X_FORWARDED_PROTO="https")
    assert secure.headers["Strict-Transport-Security"].startswith("max-age=31536000")
    assert "Strict-Transport-Security" not in Client().get("/login/").headers
