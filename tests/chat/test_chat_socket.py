"""The chat's WebSocket through Channels' WebsocketCommunicator (the real Redis channel layer)."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings

from apps.accounts.tokens import token_issue
from apps.chat.models import ChatMessage, ChatSession
from starmall.asgi import application

# transaction=True: the consumer's database_sync_to_async closes a connection found inside an
# atomic block (a plain django_db test's transaction) on PostgreSQL, as Channels' docs warn.
pytestmark = pytest.mark.django_db(transaction=True)


def _socket(session_id: int, token: str) -> WebsocketCommunicator:
    return WebsocketCommunicator(application, f"/ws/chat/{session_id}?token={token}")


async def _closed_with(communicator) -> int:
    connected, _ = await communicator.connect()
    assert connected  # accepted first, so that the client sees the close code
    closing = await communicator.receive_output(timeout=3)
    assert closing["type"] == "websocket.close"
    return closing["code"]


def test_chat_socket_refuses_bad_token_and_strangers(chat, make_customer):
    stranger = token_issue(customer_id=make_customer().pk)

    async def run():
        assert await _closed_with(_socket(chat.session.pk, "not-a-token")) == 4401
        assert await _closed_with(_socket(chat.session.pk, "")) == 4401
        assert await _closed_with(_socket(chat.session.pk, stranger)) == 4403
        assert await _closed_with(_socket(999999, token_issue(customer_id=chat.customer.pk))) == 4403

    async_to_sync(run)()


def test_chat_socket_message_is_stored_before_it_is_delivered(chat):
    seen_in_db = []

    async def run():
        customer = _socket(chat.session.pk, token_issue(customer_id=chat.customer.pk))
        teacher = _socket(chat.session.pk, token_issue(customer_id=chat.teacher_customer.pk))
        assert (await customer.connect())[0] and (await teacher.connect())[0]
        await customer.send_to(text_data=json.dumps({"type": "message", "content_type": 1, "content": "老师您好"}))
        frame = json.loads(await teacher.receive_from(timeout=5))
        # the row exists when the frame arrives
        seen_in_db.append(
            await database_sync_to_async(
                lambda: list(ChatMessage.objects.filter(pk=frame["message"]["id"]).values_list("content", "sender"))
            )()
        )
        echo = json.loads(await customer.receive_from(timeout=5))
        await customer.disconnect()
        await teacher.disconnect()
        return frame, echo

    frame, echo = async_to_sync(run)()
    assert frame["type"] == "message" and frame == echo
    assert frame["message"]["content"] == "老师您好" and frame["message"]["sender"] == "customer"
    assert frame["message"]["session_id"] == chat.session.pk
    assert seen_in_db == [[("老师您好", "customer")]]
    assert ChatSession.objects.get(pk=chat.session.pk).last_message_at is not None


def test_chat_socket_invalid_message_is_an_error_frame_and_not_stored(chat):
    async def run():
        customer = _socket(chat.session.pk, token_issue(customer_id=chat.customer.pk))
        assert (await customer.connect())[0]
        frames = []
        for bad in (
            {"type": "message", "content_type": 3, "content": "https://evil.example.com/x.jpg"},
            {"type": "message", "content_type": 1, "content": "x" * 1001},
            {"type": "dance"},
        ):
            await customer.send_to(text_data=json.dumps(bad))
            frames.append(json.loads(await customer.receive_from(timeout=5)))
        await customer.send_to(text_data="{not json")
        frames.append(json.loads(await customer.receive_from(timeout=5)))
        await customer.disconnect()
        return frames

    frames = async_to_sync(run)()
    assert [(f["type"], f["code"]) for f in frames] == [("error", "invalid")] * 4
    assert "content" in frames[0]["detail"] and "content" in frames[1]["detail"]
    assert ChatMessage.objects.count() == 0


def test_chat_socket_read_receipts_reach_the_other_side(chat):
    async def run():
        customer = _socket(chat.session.pk, token_issue(customer_id=chat.customer.pk))
        teacher = _socket(chat.session.pk, token_issue(customer_id=chat.teacher_customer.pk))
        assert (await customer.connect())[0] and (await teacher.connect())[0]
        await customer.send_to(text_data=json.dumps({"type": "message", "content_type": 1, "content": "在吗"}))
        message = json.loads(await teacher.receive_from(timeout=5))["message"]
        await customer.receive_from(timeout=5)
        await teacher.send_to(text_data=json.dumps({"type": "read", "up_to": message["id"]}))
        receipt = json.loads(await customer.receive_from(timeout=5))
        await customer.disconnect()
        await teacher.disconnect()
        return message, receipt

    message, receipt = async_to_sync(run)()
    assert receipt == {"type": "read", "up_to": message["id"], "by": "teacher"}
    assert ChatSession.objects.get(pk=chat.session.pk).teacher_last_read_id == message["id"]


def test_chat_socket_rate_limit_is_an_error_frame(chat, monkeypatch):
    import time

    settings.CHAT_MESSAGES_PER_MINUTE  # noqa: B018 - the default is 20; two are enough here
    monkeypatch.setattr(settings, "CHAT_MESSAGES_PER_MINUTE", 2)
    now = time.time()
    monkeypatch.setattr("apps.chat.services.time.time", lambda: now)

    async def run():
        customer = _socket(chat.session.pk, token_issue(customer_id=chat.customer.pk))
        assert (await customer.connect())[0]
        frames = []
        for i in range(3):
            await customer.send_to(text_data=json.dumps({"type": "message", "content_type": 1, "content": str(i)}))
            frames.append(json.loads(await customer.receive_from(timeout=5)))
        await customer.disconnect()
        return frames

    frames = async_to_sync(run)()
    assert [f["type"] for f in frames] == ["message", "message", "error"]
    assert frames[2]["code"] == "throttled"
    assert ChatMessage.objects.count() == 2


def test_chat_socket_presence_suppresses_notices(chat):
    from apps.chat.models import ChatNotice

    async def run():
        customer = _socket(chat.session.pk, token_issue(customer_id=chat.customer.pk))
        teacher = _socket(chat.session.pk, token_issue(customer_id=chat.teacher_customer.pk))
        assert (await customer.connect())[0] and (await teacher.connect())[0]
        await teacher.send_to(text_data=json.dumps({"type": "message", "content_type": 1, "content": "你好"}))
        await customer.receive_from(timeout=5)
        await teacher.receive_from(timeout=5)
        await customer.disconnect()  # the customer leaves: the next message notifies them
        await teacher.send_to(text_data=json.dumps({"type": "message", "content_type": 1, "content": "还在吗"}))
        await teacher.receive_from(timeout=5)
        await teacher.disconnect()

    async_to_sync(run)()
    assert list(ChatNotice.objects.values_list("recipient", flat=True)) == ["customer"]


def test_chat_socket_media_must_be_the_senders_own_upload(chat, not_the_senders_media, make_upload):
    voice = make_upload(chat.customer, "aac")

    async def run():
        customer = _socket(chat.session.pk, token_issue(customer_id=chat.customer.pk))
        assert (await customer.connect())[0]
        frames = []
        for content_type, content, _ in not_the_senders_media:
            await customer.send_to(
                text_data=json.dumps(
                    {"type": "message", "content_type": content_type, "content": content, "duration": 5}
                )
            )
            frames.append(json.loads(await customer.receive_from(timeout=5)))
        await customer.send_to(
            text_data=json.dumps({"type": "message", "content_type": 2, "content": voice, "duration": 30})
        )
        sent = json.loads(await customer.receive_from(timeout=5))
        await customer.disconnect()
        return frames, sent

    frames, sent = async_to_sync(run)()
    assert frames == [{"type": "error", **refusal} for _, _, refusal in not_the_senders_media]
    assert (sent["type"], sent["message"]["content"], sent["message"]["duration"]) == ("message", voice, 2)
    assert list(ChatMessage.objects.values_list("content_type", "duration")) == [(2, 2)]


def test_chat_socket_of_a_refunded_consultation_is_an_error_frame(chat, close_consultation):
    from apps.chat.models import ChatNotice

    assert close_consultation(chat, "refunded") == "refunded"

    async def run():
        frames = []
        for who in (chat.customer, chat.teacher_customer):
            socket = _socket(chat.session.pk, token_issue(customer_id=who.pk))
            assert (await socket.connect())[0]  # reading (and the socket) stay allowed
            await socket.send_to(text_data=json.dumps({"type": "message", "content_type": 1, "content": "在吗"}))
            frames.append(json.loads(await socket.receive_from(timeout=5)))
            await socket.send_to(text_data=json.dumps({"type": "ping"}))
            frames.append(json.loads(await socket.receive_from(timeout=5)))
            await socket.disconnect()
        return frames

    closed = {
        "type": "error",
        "code": "invalid_state",
        "message": "该咨询已取消或退款，会话已关闭，不能再发送消息。",
        "detail": {"status": "refunded"},
    }
    assert async_to_sync(run)() == [closed, {"type": "pong"}] * 2
    assert ChatMessage.objects.count() == 0 and ChatNotice.objects.count() == 0
