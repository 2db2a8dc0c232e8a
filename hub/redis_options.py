"""Connection options for the hub's Redis clients.

redis-py gives up on a socket read after 5 s by default, and the channel layer
(channels_redis) waits for a websocket's next message with a blocking read of the same
5 s: every idle websocket then failed with "Timeout reading from …". Reads here may
take the blocking wait plus a wide margin; a connection that really died is found by
TCP keepalive (TCP only) and redis-py's health check (a PING before a command on a
connection idle longer than its interval), not by cutting idle reads short.
"""

from __future__ import annotations

from typing import Any

CONNECT_TIMEOUT_SECONDS = 5.0
HEALTH_CHECK_INTERVAL_SECONDS = 30


def channel_layer_host(url: str, *, read_timeout: float, max_connections: int = 2000) -> dict[str, Any]:
    """One entry of CHANNEL_LAYERS' ``hosts`` for ``url`` (``redis://``, ``rediss://``, ``unix://``).

    ``max_connections``: the web process's pool. redis-py's default of 100 failed 94 of
    200 websockets connecting at once (each joins its group on a connection of its own);
    Redis itself accepts 10,000 clients by default.
    """
    host: dict[str, Any] = {
        "address": url,
        "max_connections": max_connections,
        "socket_timeout": read_timeout,
        "socket_connect_timeout": CONNECT_TIMEOUT_SECONDS,
        "health_check_interval": HEALTH_CHECK_INTERVAL_SECONDS,
    }
    if not url.startswith("unix://"):
        host["socket_keepalive"] = True  # unix sockets take no keepalive option
    return host
