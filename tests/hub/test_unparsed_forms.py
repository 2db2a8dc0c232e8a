"""Daphne's requests leave a form's body to Django (hub.unparsed_forms): Twisted parsed
every POSTed form into arguments Daphne never reads, on the event loop, and answered a
multipart body its parser refused with a bare 400 of its own. Against a real Daphne."""

from __future__ import annotations

import http.cookiejar
import re
import socket
import urllib.error
import urllib.request

import pytest

from tests.rooms.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)


def _status(server, request: bytes) -> int:
    with socket.create_connection((server.host, server.port), timeout=20) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ", 2)[1])


def test_a_body_twisteds_form_parser_refuses_reaches_the_hub(daphne_server):
    body = b"not a multipart body"
    status = _status(daphne_server, b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: multipart/form-data; boundary=x\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    assert status == 401  # the endpoint's own answer (no key); Twisted's parser answered 400


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_a_multipart_form_is_parsed_by_django(daphne_server):
    make_user("ada", password="right-horse-battery")
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), _NoRedirect())
    page = opener.open(f"{daphne_server.url}/login/", timeout=20).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    fields = {"username": "ada", "password": "right-horse-battery", "csrfmiddlewaretoken": token}
    body = b"".join(f'--b0undary\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
                    for name, value in fields.items()) + b"--b0undary--\r\n"
    request = urllib.request.Request(f"{daphne_server.url}/login/", data=body,
                                     headers={"Content-Type": "multipart/form-data; boundary=b0undary"})
    with pytest.raises(urllib.error.HTTPError) as answer:
        opener.open(request, timeout=20)
    assert answer.value.code == 302 and answer.value.headers["Location"] == "/"  # signed in
