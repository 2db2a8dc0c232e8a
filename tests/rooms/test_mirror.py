"""A worker's copy of a room's repository (rooms/repository/mirror.py) as real git meets
a hub that answers badly: what waiting fixes (no answer, a 5xx, a 429, a connection
cut), what means the worker's lease is gone (a 401), and what is a refusal that asking
again would not change (any other 4xx). Real git against a real HTTP server."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator

import pytest

from rooms.repository.mirror import (
    HubRefused,
    HubRemote,
    HubShutOut,
    HubUnreachable,
    hub_failure,
    mirror_ready,
    mirror_tips,
)


@pytest.fixture
def answering() -> Iterator:
    """A server on a free port that answers every request with the status it is set to
    (or cuts the connection for status 0)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        status = 503

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if Handler.status == 0:
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.send_response(Handler.status)
            if Handler.status == 401:
                self.send_header("WWW-Authenticate", 'Basic realm="Atrium"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def answer(status: int) -> str:
        Handler.status = status
        return f"http://127.0.0.1:{server.server_address[1]}/rooms/a-room.git"

    yield answer
    server.shutdown()


@pytest.mark.parametrize(("status", "meaning"), [
    (503, HubUnreachable), (500, HubUnreachable), (429, HubUnreachable), (0, HubUnreachable),
    (401, HubShutOut), (400, HubRefused), (403, HubRefused), (404, HubRefused),
])
def test_what_the_hubs_answer_means_for_the_worker(answering, tmp_path, status, meaning):
    copy = mirror_ready(tmp_path / "copy")
    with pytest.raises(meaning):
        mirror_tips(copy, HubRemote(answering(status), "atr-wkr-not-a-real-one"), ("main",))


def test_a_hub_that_is_not_there_is_waited_for(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(HubUnreachable):
        mirror_tips(mirror_ready(tmp_path / "copy"), HubRemote(f"http://127.0.0.1:{port}/rooms/r.git", "t"), ("main",))


def test_what_the_hub_itself_wrote_is_its_refusal_whatever_it_says():
    said = "remote: Authentication failed\nremote: Failed to connect\nerror: failed to push some refs to 'http://hub'"
    assert isinstance(hub_failure(said), HubRefused)
    assert isinstance(hub_failure("fatal: early EOF"), HubUnreachable)
    assert isinstance(hub_failure("anything", timed_out=True), HubUnreachable)


def test_the_token_is_in_no_repr_and_no_file_of_the_copy(tmp_path):
    remote = HubRemote("http://hub/rooms/r.git", "atr-wkr-secret")
    assert "secret" not in repr(remote)
    copy = mirror_ready(tmp_path / "copy")
    assert (copy / ".git" / "HEAD").read_text() == "ref: refs/heads/atrium-copy-has-no-checkout\n"
    assert mirror_ready(copy) == copy  # made once
    assert [p.name for p in tmp_path.iterdir()] == ["copy"]  # nothing half-made left beside it
