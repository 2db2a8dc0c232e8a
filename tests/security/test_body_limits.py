"""Issue 24: a 400 MB body was read in full before the gateway's 401 (Django under ASGI
receives the whole body before any view runs). Against a real Daphne: a body declared
larger than its route's limit is refused with 413 before it is sent, one without a
declared length is cut off with 413 once it passes the limit, and bodies within the
limits are served as before."""

from __future__ import annotations

import socket
import time

import pytest

from endpoint.wire import MAX_BODY_BYTES

pytestmark = pytest.mark.django_db(transaction=True)


def _status(sock: socket.socket, timeout: float = 10) -> tuple[int, float]:
    sock.settimeout(timeout)
    started, data = time.monotonic(), b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ", 2)[1]), time.monotonic() - started


def _connect(server) -> socket.socket:
    return socket.create_connection((server.host, server.port), timeout=10)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/rooms/x/v1/messages", "/login/", "/rooms/new/"])
def test_a_body_declared_too_large_is_refused_before_it_is_sent(daphne_server, path):
    with _connect(daphne_server) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {400 * 1024 * 1024}\r\n\r\n".encode() + b"{" * 1024)
        status, took = _status(sock)
    assert status == 413 and took < 5


def test_a_body_without_a_declared_length_is_cut_off_past_the_limit(daphne_server):
    chunk = b"x" * (1024 * 1024)
    with _connect(daphne_server) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        try:
            for _ in range(MAX_BODY_BYTES // len(chunk) + 4):
                sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        except OSError:
            pass  # the server stopped reading and closed: what is being tested
        status, _took = _status(sock)
    assert status == 413


def test_bodies_within_the_limits_reach_the_views(daphne_server):
    with _connect(daphne_server) as sock:
        body = b'{"model": "x", "messages": []}'
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        status, _took = _status(sock)
    assert status == 401  # the endpoint's own answer: no key
