"""The real web server (gunicorn + uvicorn workers on ``starmall.asgi``) at its edges: WebSocket
paths no route takes, whose address the login throttle counts (``TRUSTED_PROXIES``), and the
pages ``make run``'s settings show outside the API."""

from __future__ import annotations

import asyncio
import re

import pytest
import requests
import websockets
from django.core.cache import cache
from rest_framework.throttling import SimpleRateThrottle

pytestmark = pytest.mark.slow

UNROUTED = ["/ws/chat/0", "/ws/chat/abc", "/ws/other", "/api/v1/products"]


async def _handshake_status(url: str) -> int:
    """The HTTP status a WebSocket handshake to ``url`` is refused with (101 if accepted)."""
    try:
        async with websockets.connect(url, open_timeout=5):
            return 101
    except websockets.InvalidStatus as refused:
        return refused.response.status_code


async def _close_code(url: str) -> int:
    """The code the server closes an accepted socket with."""
    async with websockets.connect(url, open_timeout=5) as socket:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(socket.recv(), 5)
        return closed.value.rcvd.code


def test_websocket_to_a_path_no_route_takes_is_refused_without_a_traceback(shop_server):
    server = shop_server(env={"WEB_WORKERS": "1"})
    ws = server.base.replace("http://", "ws://")

    async def scenario():
        statuses = [await _handshake_status(f"{ws}{path}?token=abc") for path in UNROUTED]
        # The chat's own route still reaches the consumer (a bad token: accepted, closed 4401).
        return statuses, await _close_code(f"{ws}/ws/chat/1?token=bad")

    statuses, chat_close = asyncio.run(scenario())
    assert statuses == [403] * len(UNROUTED)
    assert chat_close == 4401
    # The HTTP API on the same port is untouched.
    assert requests.get(f"{server.base}/api/v1/nonexistent", timeout=5).json()["code"] == "not_found"
    log = server.stderr()  # uvicorn logs WebSocket handshakes on its error logger
    assert "Traceback" not in log and "No route found" not in log and "Exception in ASGI application" not in log
    assert len(re.findall(r'"WebSocket /(?:ws|api)/[^"]*" 403', log)) == len(UNROUTED)
    assert "token=abc" not in log and "token=bad" not in log and "token=***" in log  # tokens redacted


# --- whose address the login throttle counts --------------------------------------------------


def _login_rate() -> int:
    from django.conf import settings

    allowed, _seconds = SimpleRateThrottle.parse_rate(None, settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["login"])
    return allowed


def _logins(server, count: int, forwarded_for=None) -> list[int]:
    """``count`` logins with a code WeChat refuses; ``forwarded_for(i)`` the i-th header value."""
    session = requests.Session()
    statuses = []
    for i in range(count):
        headers = {"X-Forwarded-For": forwarded_for(i)} if forwarded_for else {}
        response = session.post(
            f"{server.base}/api/v1/auth/wechat/login", json={"code": "no-such-code"}, headers=headers, timeout=10
        )
        statuses.append(response.status_code)
    return statuses


def _throttle_key(address: str) -> str:
    return f"throttle_login_{address}"  # DRF's SimpleRateThrottle.cache_format for scope "login"


def _logged_clients(server) -> set[str]:
    """The client addresses uvicorn's access log shows for the logins."""
    return set(re.findall(r"(\S+?):\d+ - \"POST /api/v1/auth/wechat/login", server.stdout()))


def test_rotating_x_forwarded_for_does_not_move_the_login_throttle_on_the_real_server(shop_server):
    """No trusted proxy (the default): the address is the socket's, for uvicorn and the app."""
    rate = _login_rate()
    server = shop_server()
    plain = _logins(server, rate + 5)
    assert plain == [400] * rate + [429] * 5  # 400: WeChat refused the code (40029)
    assert cache.get(_throttle_key("127.0.0.1")) is not None
    cache.delete(_throttle_key("127.0.0.1"))

    spoofed = _logins(server, rate + 5, forwarded_for=lambda i: f"198.51.100.{i + 1}")
    assert spoofed == plain
    assert [cache.get(_throttle_key(f"198.51.100.{i + 1}")) for i in range(rate + 5)] == [None] * (rate + 5)
    assert len(cache.get(_throttle_key("127.0.0.1"))) == rate  # the app counted the socket's address
    assert _logged_clients(server) == {"127.0.0.1"}


def test_behind_a_trusted_proxy_uvicorn_and_the_app_take_the_address_it_saw(shop_server):
    """``TRUSTED_PROXIES=127.0.0.1`` (nginx on this host): the client is the last address the
    proxy appended; what the client wrote before it does not change its bucket."""
    rate = _login_rate()
    server = shop_server(env={"TRUSTED_PROXIES": "127.0.0.1"})
    statuses = _logins(server, rate + 2, forwarded_for=lambda i: f"10.9.9.{i + 1}, 198.51.100.50")
    assert statuses == [400] * rate + [429] * 2
    assert len(cache.get(_throttle_key("198.51.100.50"))) == rate
    assert cache.get(_throttle_key("127.0.0.1")) is None
    assert _logged_clients(server) == {"198.51.100.50"}
    # Another client behind the same proxy has its own allowance.
    assert _logins(server, 1, forwarded_for=lambda i: "198.51.100.51") == [400]


# --- pages under make run's settings ------------------------------------------------------------


def test_front_page_and_chinese_404_under_the_local_settings(shop_server):
    """``make run`` serves ``starmall.settings.local`` (DEBUG on by default): ``/`` is the
    shop's page and an unknown path the Chinese 404, not Django's English debug page."""
    from django.conf import settings

    server = shop_server(settings_module="starmall.settings.local", env={"WEB_WORKERS": "1", "DJANGO_DEBUG": "true"})
    front = requests.get(f"{server.base}/", timeout=10)
    assert front.status_code == 200 and f"<h1>{settings.SHOP_NAME}</h1>" in front.text
    assert re.findall(r'<a href="([^"]+)"', front.text) == ["/api/docs/", "/admin/", "/healthz"]
    missing = requests.get(f"{server.base}/nonexistent", timeout=10)
    assert missing.status_code == 404 and "<h1>页面不存在</h1>" in missing.text
    assert "Page not found" not in missing.text and "DEBUG = True" not in missing.text
    api = requests.get(f"{server.base}/api/v1/nonexistent", timeout=10)
    assert (api.status_code, api.json()["code"]) == (404, "not_found")
