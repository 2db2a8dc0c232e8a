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


def _daphne_as_compose_runs_it(tmp_path):
    """Daphne with the options docker/compose.yaml's web service gives it (its address and
    port ours): the lockout is only as good as the address Daphne says a request came from."""
    import sys
    from pathlib import Path

    import yaml

    from tests.conftest import DaphneServer, _free_port, _serves, _wait_until, start_hub_process

    compose = yaml.safe_load((Path(__file__).resolve().parents[2] / "docker" / "compose.yaml").read_text())
    command = compose["services"]["web"]["command"]
    options = [arg for i, arg in enumerate(command[1:-1])
               if arg not in ("--bind", "--port") and command[i] not in ("--bind", "--port")]
    host, port = "127.0.0.1", _free_port()
    process = start_hub_process("daphne", [sys.executable, "-m", "daphne", "-b", host, "-p", str(port), *options,
                                           command[-1]], tmp_path / "daphne.log", DEBUG="true", ALLOWED_HOSTS=host)
    server = DaphneServer(hub_process=process, host=host, port=port)
    _wait_until(lambda: _serves(f"{server.url}/login/"), process, "serve /login/")
    return server


def _login_over_http(base: str, username: str, password: str, forwarded_for: str) -> int:
    import http.cookiejar
    import re
    import urllib.error
    import urllib.parse
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), NoRedirect())
    headers = {"X-Forwarded-For": forwarded_for}
    page = opener.open(urllib.request.Request(f"{base}/login/", headers=headers), timeout=20).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    body = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token})
    try:
        return opener.open(urllib.request.Request(f"{base}/login/", data=body.encode(), headers=headers),
                           timeout=20).status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.django_db(transaction=True)
def test_a_forged_x_forwarded_for_per_guess_does_not_escape_the_lockout(tmp_path, settings):
    """Daphne with --proxy-headers (as compose ran it) took each request's address from the
    header a client writes: one address per guess, never a lockout."""
    make_user("victim", password="right-horse-battery")
    server = _daphne_as_compose_runs_it(tmp_path)
    try:
        limit = settings.AXES_FAILURE_LIMIT
        codes = [_login_over_http(server.url, "victim", f"guess-{n}", f"198.51.100.{n + 1}") for n in range(limit + 2)]
        assert codes == [200] * (limit - 1) + [429] * 3, codes  # the limit-th wrong password locks it
        assert _login_over_http(server.url, "victim", "right-horse-battery", "203.0.113.77") == 429
    finally:
        server.hub_process.stop()
