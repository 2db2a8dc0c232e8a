"""Where an agent profile's own base URL may point: the internet, not the hub's machine.

A base URL is where the hub POSTs a conversation and whose answer (or error) the agent
reads back, so one on loopback or a private range would let anyone with a profile talk to
the hub's Redis, database or metadata service from the hub itself. It is refused unless
the operator lists its host or a network holding its address in ``ATRIUM_BASE_URL_ALLOW``
(comma-separated: host names, addresses, CIDRs), e.g. for a vLLM on the same network.
Checked when a profile is saved, again each time a provider is built for it, and at
each connection the provider opens (`connection_address`, agents/providers/checked_http.py):
a name may answer with a public address when checked and with 127.0.0.1 the next time
(DNS rebinding), and a redirect may lead anywhere, so the address checked is the address
connected to. A host that does not resolve passes the profile's check (nothing can be
reached through it) but not a connection, which would look it up again.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

ALLOW_VARIABLE = "ATRIUM_BASE_URL_ALLOW"


class AddressRefused(ValueError):
    pass


def allowed_from(env: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(item.strip().lower() for item in env.get(ALLOW_VARIABLE, "").split(",") if item.strip())


def check_base_url(url: str, allowed: Iterable[str] = ()) -> None:
    """Raise AddressRefused when ``url`` is not http(s) or leads to a non-public address."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AddressRefused(f"{url!r} is not an http:// or https:// URL with a host")
    connection_address(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80), allowed)


def connection_address(host: str, port: int, allowed: Iterable[str] = (), *, at_connection: bool = False) -> str:
    """Where to connect for ``host``: the first address it resolves to, once every one of
    them is public or allowed (``host`` itself when it is allowed by name); AddressRefused
    otherwise. A name that does not resolve passes a profile's check (nothing can be
    reached through it) but not a connection, which would look it up again."""
    host = host.lower().strip("[]")
    allowed = tuple(allowed)
    if host in allowed:
        return host
    networks = [ipaddress.ip_network(item, strict=False) for item in allowed if _is_network(item)]
    addresses = _addresses(host, port)
    for address in addresses:
        if not address.is_global and not any(address in network for network in networks):
            raise AddressRefused(
                f"{host} is {address}, an address of this machine or a private network; the hub does not "
                f"send conversations there unless the operator allows it ({ALLOW_VARIABLE})")
    if not addresses and at_connection:
        raise AddressRefused(f"{host} does not resolve")
    return str(addresses[0]) if addresses else host


def _addresses(host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """In the resolver's order, each once."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return []
    return list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in found))


def _is_network(item: str) -> bool:
    try:
        ipaddress.ip_network(item, strict=False)
    except ValueError:
        return False
    return True
