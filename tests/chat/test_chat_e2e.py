"""End to end: the ASGI application served by uvicorn on a free port, a real WebSocket client
(``websockets``) for the customer and the teacher, and the HTTP API on the SAME host and port."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import urllib.request

import pytest
import uvicorn
import websockets

from apps.accounts.tokens import token_issue
from apps.chat.models import ChatMessage

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def asgi_server():
    """``starmall.asgi.application`` under uvicorn in a thread; yields ``host:port``."""
    from starmall.asgi import application

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            application, host="127.0.0.1", port=port, lifespan="off", log_level="warning", ws="websockets-sansio"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_chat_end_to_end_over_a_real_websocket(chat, asgi_server, make_upload):
    customer_token = token_issue(customer_id=chat.customer.pk)
    teacher_token = token_issue(customer_id=chat.teacher_customer.pk)
    base = f"ws://{asgi_server}/ws/chat/{chat.session.pk}"
    image = make_upload(chat.teacher_customer)  # the teacher's own upload

    def http(method: str, path: str, token: str, body: dict | None = None) -> tuple[int, dict | None]:
        request = urllib.request.Request(
            f"http://{asgi_server}{path}",
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None

    async def scenario():
        async with websockets.connect(f"{base}?token=nope") as refused:
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(refused.recv(), 5)
            assert closed.value.rcvd.code == 4401
        async with (
            websockets.connect(f"{base}?token={customer_token}") as customer,
            websockets.connect(f"{base}?token={teacher_token}") as teacher,
        ):
            # An idle socket stays open past 5 s (redis-py 8's default socket timeout once broke
            # the channel layer's blocking read: every quiet chat dropped after 5 s).
            await asyncio.sleep(7)
            await customer.send(json.dumps({"type": "message", "content_type": 1, "content": "老师您好"}))
            got = json.loads(await asyncio.wait_for(teacher.recv(), 5))
            assert got["message"]["content"] == "老师您好"
            await asyncio.wait_for(customer.recv(), 5)  # its own echo
            await teacher.send(json.dumps({"type": "message", "content_type": 3, "content": image}))
            got = json.loads(await asyncio.wait_for(customer.recv(), 5))
            assert (got["message"]["content_type"], got["message"]["sender"]) == (3, "teacher")
        # the customer is gone; the teacher writes twice more
        async with websockets.connect(f"{base}?token={teacher_token}") as teacher:
            for text in ("您的八字我看过了", "明天详谈"):
                await teacher.send(json.dumps({"type": "message", "content_type": 1, "content": text}))
                await asyncio.wait_for(teacher.recv(), 5)
        # reconnecting, the customer reads what it missed over HTTP on the same host and port
        async with websockets.connect(f"{base}?token={customer_token}") as customer:
            status, history = await asyncio.to_thread(
                http, "GET", f"/api/v1/chat/sessions/{chat.session.pk}/messages", customer_token
            )
            assert status == 200
            assert [m["content"] for m in history["results"][:2]] == ["明天详谈", "您的八字我看过了"]
            status, sessions = await asyncio.to_thread(http, "GET", "/api/v1/chat/sessions", customer_token)
            assert sessions["results"][0]["unread"] == 3
            status, _ = await asyncio.to_thread(
                http,
                "POST",
                f"/api/v1/chat/sessions/{chat.session.pk}/read",
                customer_token,
                {"up_to": history["results"][0]["id"]},
            )
            assert status == 204
            receipt = json.loads(await asyncio.wait_for(customer.recv(), 5))
            assert receipt == {"type": "read", "up_to": history["results"][0]["id"], "by": "customer"}

    asyncio.run(scenario())
    assert list(ChatMessage.objects.order_by("id").values_list("sender", "content_type")) == [
        ("customer", 1),
        ("teacher", 3),
        ("teacher", 1),
        ("teacher", 1),
    ]
