"""The real web server (gunicorn + uvicorn workers on ``starmall.asgi``) at its edges: WebSocket
paths no route takes."""

from __future__ import annotations

import asyncio
import re

import pytest
import requests
import websockets

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
