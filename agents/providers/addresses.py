"""Where an agent profile's own base URL may point: the internet, not the hub's machine.

A base URL is where the hub POSTs a conversation and whose answer (or error) the agent
reads back, so one on loopback or a private range would let anyone with a profile talk to
the hub's Redis, database or metadata service from the hub itself. It is refused unless
the operator lists its host or a network holding its address in ``ATRIUM_BASE_URL_ALLOW``
(comma-separated: host names, addresses, CIDRs), e.g. for a vLLM on the same network.
Checked when a profile is saved and again each time a provider is built for it. A host
that does not resolve is not refused (nothing can be reached through it); one that
resolves later to a private address is refused when it is used.
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
    host = parts.hostname.lower()
    allowed = tuple(allowed)
    if host in allowed:
        return
    networks = [ipaddress.ip_network(item, strict=False) for item in allowed if _is_network(item)]
    for address in _addresses(host, parts.port or (443 if parts.scheme == "https" else 80)):
        if not address.is_global and not any(address in network for network in networks):
            raise AddressRefused(
                f"{host} is {address}, an address of this machine or a private network; the hub does not "
                f"send conversations there unless the operator allows it ({ALLOW_VARIABLE})")


def _addresses(host: str, port: int) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        return {ipaddress.ip_address(host)}
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return set()
    return {ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in found}


def _is_network(item: str) -> bool:
    try:
        ipaddress.ip_network(item, strict=False)
    except ValueError:
        return False
    return True
