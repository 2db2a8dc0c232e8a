"""Request bodies bounded before they are read, for every route.

Daphne's HTTP server (Twisted) receives a request's whole body before it hands the
request to the hub, so a 400 MB body was read in full before the gateway's 401. Here
Daphne's request learns its route's limit when its headers are in: a body declared
larger is refused with 413 at once (nothing of it read), and one without a declared
length is refused once it grows past the limit. The limits: a room's bundle upload
``ATRIUM_UPLOAD_MAX_BYTES`` (and a little for the form), as a push to the git remote is
(a fetch's request 10 MB, git's own cap), the gateway endpoint the
providers' own request limit, everything else Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE``.
"""

from __future__ import annotations

import re

from django.conf import settings

from endpoint.wire import MAX_BODY_BYTES

FORM_ALLOWANCE = 1024 * 1024  # the upload form's other fields and multipart framing
_ENDPOINT = re.compile(r"^/(?:rooms/[^/]+/)?v1/")
_GIT_PUSH = re.compile(r"^/rooms/[^/]+\.git/git-receive-pack$")
_GIT = re.compile(r"^/rooms/[^/]+\.git/")
GIT_FETCH_MAX_BYTES = 10 * 1024 * 1024  # a fetch's negotiation: git's own cap on what it sends


def limit_for(path: str) -> int:
    if path == "/rooms/new/" or _GIT_PUSH.match(path):  # a bundle, or a push's pack
        return settings.ATRIUM_UPLOAD_MAX_BYTES + FORM_ALLOWANCE
    if _GIT.match(path):
        return GIT_FETCH_MAX_BYTES
    if _ENDPOINT.match(path):
        return MAX_BODY_BYTES
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def install() -> None:
    """Bound the bodies of Daphne's requests (idempotent)."""
    from daphne.http_protocol import WebRequest

    if getattr(WebRequest, "atrium_bounded", False):
        return
    got_length, content_chunk = WebRequest.gotLength, WebRequest.handleContentChunk

    def bounded_got_length(self, length: int | None) -> None:
        raw = getattr(self.channel, "_path", b"/")  # the request line's target, parsed before the headers
        self.atrium_limit = limit_for(raw.split(b"?", 1)[0].decode("latin-1"))
        self.atrium_received = 0
        self.atrium_refused = False
        got_length(self, None if length is not None and length > self.atrium_limit else length)
        if length is not None and length > self.atrium_limit:
            _refuse(self)

    def bounded_content_chunk(self, data: bytes) -> None:
        if self.atrium_refused:
            return
        self.atrium_received += len(data)
        if self.atrium_received > self.atrium_limit:
            _refuse(self)
            return
        content_chunk(self, data)

    WebRequest.gotLength = bounded_got_length
    WebRequest.handleContentChunk = bounded_content_chunk
    WebRequest.atrium_bounded = True


def _refuse(request) -> None:
    request.atrium_refused = True
    body = f"Request body too large: at most {request.atrium_limit} bytes here.\n".encode()
    request.channel.transport.write(
        b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: text/plain; charset=utf-8\r\n"
        + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    request.channel.loseConnection()
