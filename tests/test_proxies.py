"""``TRUSTED_PROXIES``: the one list of believed proxies (starmall/proxies.py) and its rule,
which must be uvicorn's own (the web server rewrites the address with it first)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from starmall import proxies

TRUSTED = ("127.0.0.1", "10.0.0.0/8", "::1")
CASES = [
    # (socket peer, X-Forwarded-For)
    ("127.0.0.1", None),
    ("127.0.0.1", ""),
    ("127.0.0.1", "203.0.113.7"),
    ("127.0.0.1", "6.6.6.6, 203.0.113.7"),
    ("127.0.0.1", "203.0.113.7, 10.1.2.3"),  # two proxies: nginx behind a balancer on 10/8
    ("127.0.0.1", "10.1.2.3, 127.0.0.1"),  # every entry a proxy: the first one
    ("127.0.0.1", "203.0.113.7:5050"),
    ("127.0.0.1", "[2001:db8::1]:443, 10.0.0.1"),
    ("127.0.0.1", "2001:db8::1"),
    ("127.0.0.1", "garbage, 10.0.0.1"),
    ("127.0.0.1", "203.0.113.7, , 10.0.0.1"),
    ("::1", "203.0.113.7"),
    ("192.0.2.1", "6.6.6.6"),  # not a trusted peer: the header names no one
]


def _uvicorn_client(remote: str, forwarded_for: str | None) -> str:
    seen = {}

    async def app(scope, receive, send):
        seen["client"] = scope["client"][0]

    headers = [] if forwarded_for is None else [(b"x-forwarded-for", forwarded_for.encode())]
    middleware = ProxyHeadersMiddleware(app, trusted_hosts=list(TRUSTED))
    asyncio.run(middleware({"type": "http", "client": (remote, 40000), "headers": headers}, None, None))
    return seen["client"]


@pytest.mark.parametrize(("remote", "forwarded_for"), CASES)
def test_the_app_takes_the_client_uvicorn_takes(remote, forwarded_for):
    uvicorn_says = _uvicorn_client(remote, forwarded_for)
    assert proxies.client_address(remote, forwarded_for, TRUSTED) == uvicorn_says
    # Applied again to the address uvicorn rewrote (what the app sees behind it): no change.
    assert proxies.client_address(uvicorn_says, forwarded_for, TRUSTED) == uvicorn_says


def test_client_address_examples():
    assert proxies.client_address("127.0.0.1", "6.6.6.6, 203.0.113.7", TRUSTED) == "203.0.113.7"
    assert proxies.client_address("127.0.0.1", "6.6.6.6, 203.0.113.7", ()) == "127.0.0.1"
    assert proxies.client_address("192.0.2.1", "6.6.6.6", TRUSTED) == "192.0.2.1"


def test_parse_lists_addresses_and_networks_only():
    assert proxies.parse("") == []
    assert proxies.parse(" 127.0.0.1, 10.0.0.0/8 ,::1 ") == ["127.0.0.1", "10.0.0.0/8", "::1"]
    for bad in ("*", "nginx", "10.0.0.1/8", "127.0.0.1, *"):
        with pytest.raises(ValueError):
            proxies.parse(bad)


def _settings_error(**env: str) -> str:
    """stderr of importing the shop's settings with ``env`` (empty if they load)."""
    import os

    code = "import django; django.setup()"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "starmall.settings.test", **env},
    )
    return result.stderr if result.returncode else ""


def test_settings_refuse_the_old_proxy_count_and_a_bad_list():
    assert "TRUSTED_PROXY_COUNT was replaced by TRUSTED_PROXIES" in _settings_error(TRUSTED_PROXY_COUNT="1")
    assert "TRUSTED_PROXIES" in _settings_error(TRUSTED_PROXIES="*")
    assert _settings_error(TRUSTED_PROXY_COUNT="0", TRUSTED_PROXIES="127.0.0.1") == ""
