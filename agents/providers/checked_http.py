"""The HTTP clients of a provider whose base URL is a profile's own: every connection
they open goes to an address checked by `addresses.connection_address` at that moment,
so neither a name that resolves elsewhere the next time (DNS rebinding) nor a redirect
leads the hub to this machine or a private network. The TLS name is still the URL's
host (httpcore verifies the certificate against it, not against the address)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2

from agents.providers.addresses import AddressRefused, connection_address


def _checked(host: str, port: int, allowed: tuple[str, ...]) -> str:
    try:
        return connection_address(host, port, allowed, at_connection=True)
    except AddressRefused as exc:
        raise httpcore2.ConnectError(f"refused by the hub: {exc}") from None


class _CheckedBackend(httpcore2.SyncBackend):
    def __init__(self, allowed: Iterable[str]) -> None:
        super().__init__()
        self._allowed = tuple(allowed)

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore2.NetworkStream:
        return super().connect_tcp(_checked(host, port, self._allowed), port, timeout, local_address, socket_options)


class _AsyncCheckedBackend(httpcore2.AnyIOBackend):
    def __init__(self, allowed: Iterable[str]) -> None:
        super().__init__()
        self._allowed = tuple(allowed)

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Any = None) -> httpcore2.AsyncNetworkStream:
        address = await asyncio.to_thread(_checked, host, port, self._allowed)  # the resolver blocks
        return await super().connect_tcp(address, port, timeout, local_address, socket_options)


def checked_client(client_class: type[Any], allowed: Iterable[str]) -> Any:
    """An instance of the SDK's own client class (``DefaultHttpxClient`` or
    ``DefaultAsyncHttpxClient``: its timeouts, limits and redirects), whose direct
    connections are checked. Through an operator's proxy (HTTPS_PROXY) the proxy
    connects, and the operator chose it."""
    client = client_class()
    pool = getattr(client._transport, "_pool", None)
    if isinstance(pool, httpcore2.ConnectionPool) and not isinstance(pool, httpcore2.HTTPProxy | httpcore2.SOCKSProxy):
        pool._network_backend = _CheckedBackend(allowed)
    elif isinstance(pool, httpcore2.AsyncConnectionPool) and not isinstance(
            pool, httpcore2.AsyncHTTPProxy | httpcore2.AsyncSOCKSProxy):
        pool._network_backend = _AsyncCheckedBackend(allowed)
    else:
        raise RuntimeError("the SDK's HTTP client has no connection pool of its own to check")
    assert isinstance(client, httpx2.Client | httpx2.AsyncClient)
    return client
