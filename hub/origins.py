"""Websockets open only from this hub's own pages: the Origin header is compared by
scheme, host and port with the origin the socket was reached at (its Host header, which
must be one of ALLOWED_HOSTS), or with one of CSRF_TRUSTED_ORIGINS: the same origins
Django's CSRF check accepts for a form post. A socket without an Origin is refused
(every browser sends one)."""

from __future__ import annotations

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}
Origin = tuple[str, str, int]


def parse_origin(value: str) -> Origin | None:
    """(scheme, host, port) of an http(s) origin, default ports filled in; None if it is not one."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme not in DEFAULT_PORTS or not host or parts.path not in ("", "/") or parts.username is not None:
        return None
    return scheme, host, port if port is not None else DEFAULT_PORTS[scheme]


def origin_allowed(origin: str, *, host_header: str, secure: bool) -> bool:
    parsed = parse_origin(origin)
    if parsed is None:
        return False
    host, port = split_domain_port(host_header)
    if host and validate_host(host, settings.ALLOWED_HOSTS):
        scheme = "https" if secure else "http"
        if parsed == (scheme, host, int(port) if port else DEFAULT_PORTS[scheme]):
            return True
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        wildcard = "://*." in trusted
        pattern = parse_origin(trusted.replace("://*.", "://", 1))
        if pattern is None:
            continue
        if parsed == pattern or (wildcard and parsed[0] == pattern[0] and parsed[2] == pattern[2]
                                 and parsed[1].endswith("." + pattern[1])):
            return True
    return False


def _is_secure(scope: dict, headers: dict[bytes, bytes]) -> bool:
    if scope.get("scheme") == "wss":
        return True
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy:
        name = proxy[0].removeprefix("HTTP_").replace("_", "-").lower().encode("latin1")
        return headers.get(name, b"").decode("latin1").split(",")[0].strip() == proxy[1]
    return False


class OriginValidator:
    """ASGI middleware for websockets: refuse the handshake from any other origin."""

    def __init__(self, application) -> None:
        self.application = application

    async def __call__(self, scope, receive, send):
        headers = dict(scope.get("headers", ()))
        origin, host = headers.get(b"origin"), headers.get(b"host", b"")
        if origin is not None and origin_allowed(origin.decode("latin1"), host_header=host.decode("latin1"),
                                                 secure=_is_secure(scope, headers)):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)
