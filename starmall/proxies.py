"""Which proxies' ``X-Forwarded-For`` is believed: ONE list for the web server and the app.

``TRUSTED_PROXIES`` (comma-separated addresses or networks: ``127.0.0.1`` for nginx on the same host,
``10.0.0.0/8`` for a load balancer's subnet) is read here, without Django, by the uvicorn workers
(``starmall/uvicorn_worker.py``: ``proxy_headers``, ``forwarded_allow_ips``; ``scope["client"]`` and so
Django's ``REMOTE_ADDR`` are then the client's) and by the app (:func:`starmall.api.middleware.client_ip`,
for servers that do not rewrite the address: Django's test client, ``runserver``). Empty (the default):
no proxy is trusted and the header is ignored. Both take the client as :func:`client_address` says
(uvicorn's rule), so they agree, and applying it to an address uvicorn already rewrote changes nothing.
"""

from __future__ import annotations

import ipaddress
import os
from functools import lru_cache

ENV = "TRUSTED_PROXIES"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse(value: str) -> list[str]:
    """``"127.0.0.1, 10.0.0.0/8"`` -> ``["127.0.0.1", "10.0.0.0/8"]``; ``""`` -> ``[]``.

    Raises ValueError for anything that is not an IP address or network (``ipaddress``, strict:
    no host bits in a network, as gunicorn's ``forwarded_allow_ips`` checks) and for ``*``,
    which would let any client name its own address.
    """
    entries = [item.strip() for item in value.split(",") if item.strip()]
    for entry in entries:
        if entry == "*":
            raise ValueError(f"{ENV} must list the proxies' addresses; '*' would believe any client")
        ipaddress.ip_network(entry)  # ValueError names the bad entry
    return entries


def from_environ(environ=os.environ) -> list[str]:
    """:func:`parse` of ``TRUSTED_PROXIES`` in ``environ`` (default: the process environment)."""
    return parse(environ.get(ENV, ""))


@lru_cache(maxsize=16)
def _networks(trusted: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(entry) for entry in trusted)


def is_trusted(host: str | None, trusted: tuple[str, ...]) -> bool:
    """Whether ``host`` (an address, or anything else: never trusted) is one of ``trusted``."""
    try:
        address = ipaddress.ip_address(host or "")
    except ValueError:
        return False
    return any(address in network for network in _networks(trusted))


def _host(entry: str) -> str:
    """An ``X-Forwarded-For`` entry without its port (``1.2.3.4:80``, ``[::1]:80``), as uvicorn
    reads it; anything malformed as it is (then never a trusted address)."""
    if entry.startswith("["):
        end = entry.find("]")
        rest = entry[end + 1 :]
        if end == -1 or (rest and not rest.startswith(":")):
            return entry
        return entry[1:end]
    if entry.count(":") == 1:
        host, port = entry.split(":")
        try:
            int(port)
        except ValueError:
            return entry
        return host
    return entry


def client_address(remote: str | None, forwarded_for: str | None, trusted: tuple[str, ...]) -> str | None:
    """The client's address: ``remote`` (the socket's peer) unless it is a trusted proxy; then
    the first ``forwarded_for`` entry from the right that is not one (each proxy appends the
    address it saw), or the first entry if all are (the client is itself a proxy).

    ``forwarded_for`` is the header's value (several headers joined by commas); an empty
    header or entry leaves ``remote``, as uvicorn does.
    """
    if not forwarded_for or not is_trusted(remote, trusted):
        return remote
    entries = [_host(item.strip()) for item in forwarded_for.split(",")]
    for host in reversed(entries):
        if not is_trusted(host, trusted):
            return host or remote
    return entries[0] or remote
