"""A local HTTP server that speaks the providers' wire protocols from scripted replies.

Tests enqueue replies per path (``/v1/chat/completions`` for OpenAI-compatible
servers, ``/v1/messages`` for Anthropic) and read back every request the SDKs sent,
so they assert the exact wire shape without patching SDK internals.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "providers"


def load_fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    # Held until the test sets it (at most HOLD_SECONDS): what happens while a request is
    # upstream, measured against the test's own clock rather than the machine's speed.
    hold: threading.Event | None = None
    # Sent as chunked transfer encoding, each part after its pause: a stream that arrives
    # over time (``body`` is then unused).
    parts: tuple[tuple[float, bytes], ...] = ()


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    raw: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.raw)


HOLD_SECONDS = 60.0


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # many clients at once (benchmarks): the default 5 resets them


class WireServer:
    def __init__(self) -> None:
        self._replies: dict[str, deque[Reply]] = defaultdict(deque)
        self._lock = threading.Lock()
        self.requests: list[Received] = []
        self.cut_off: list[str] = []  # the paths of streams whose client closed the connection mid-way
        self.parts_sent: list[float] = []  # when each part of a stream was written (time.monotonic())
        self._httpd = _Server(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def reply(
        self,
        path: str,
        *,
        status: int = 200,
        json_body: Any = None,
        text: str | None = None,
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
        hold: threading.Event | None = None,
    ) -> None:
        if text is not None:
            body = text.encode("utf-8")
            content_type = "application/json" if text.lstrip()[:1] in ("{", "[") else "text/html"
        else:
            body = json.dumps(json_body).encode("utf-8")
            content_type = "application/json"
        all_headers = {"Content-Type": content_type, **(headers or {})}
        with self._lock:
            self._replies[path].append(Reply(status, body, all_headers, delay, hold))

    def stream(self, path: str, parts: list[tuple[float, str]], *, status: int = 200) -> None:
        """A server-sent event stream whose parts arrive over time: (pause before, text)."""
        reply = Reply(status, b"", {"Content-Type": "text/event-stream"},
                      parts=tuple((pause, text.encode("utf-8")) for pause, text in parts))
        with self._lock:
            self._replies[path].append(reply)

    def requests_to(self, path: str) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next(self, received: Received) -> Reply:
        with self._lock:
            self.requests.append(received)
            queue = self._replies.get(received.path)
            if queue:
                return queue.popleft()
        message = f"wire server: no scripted reply for {received.method} {received.path}"
        # 418: a permanent error, so an unscripted request fails the test loudly
        # instead of being retried as a transient one.
        return Reply(
            418,
            json.dumps({"error": {"message": message}}).encode(),
            {"Content-Type": "application/json"},
        )

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # The headers and the body leave in two writes: with Nagle's algorithm the
            # body waited for the client's delayed ACK, 40 ms on every keep-alive request.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                received = Received(
                    method="POST",
                    path=self.path.split("?", 1)[0],
                    headers={k.lower(): v for k, v in self.headers.items()},
                    raw=raw,
                )
                reply = server._next(received)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.hold is not None:
                    reply.hold.wait(HOLD_SECONDS)
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    if reply.parts:
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        try:
                            for pause, part in reply.parts:
                                time.sleep(pause)
                                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                                self.wfile.flush()
                                server.parts_sent.append(time.monotonic())
                            self.wfile.write(b"0\r\n\r\n")
                        except (BrokenPipeError, ConnectionResetError):
                            server.cut_off.append(received.path)
                        return
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


class RefusingEndpoint:
    """A bound port with no listener: every connection is refused, immediately."""

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))

    @property
    def url(self) -> str:
        host, port = self._socket.getsockname()
        return f"http://{host}:{port}"

    def close(self) -> None:
        self._socket.close()
