"""The chat's WebSocket: ``/ws/chat/{session_id}?token=<API token>``.

Frames in: ``{"type": "message", "content_type", "content", "duration"?}``, ``{"type": "read",
"up_to"}``, ``{"type": "ping"}``. Frames out: ``{"type": "message", "message": {...}}``,
``{"type": "read", "up_to", "by"}``, ``{"type": "pong"}`` and ``{"type": "error", "code",
"message", "detail"}`` (API.md's error body, e.g. ``invalid_state`` for a closed chat; the socket
stays open). A bad token closes with 4401, someone else's (or no such) session with 4403. Every
message goes through :func:`apps.chat.services.message_send` in a worker thread (the row is
committed) before it is sent to the group: what a socket shows is in the database.
"""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from apps.chat import frames, presence, services
from apps.chat.exceptions import Forbidden
from starmall.errors import InvalidInput, NotFound, ShopError

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
MAX_FRAME_CHARS = 8192


def _customer_for_token(token: str) -> int | None:
    """The active customer a token belongs to, or None (same rule as the API's Bearer auth)."""
    from apps.accounts.models import Customer
    from apps.accounts.tokens import token_customer_id

    if not token or len(token) > 200:
        return None
    customer_id = token_customer_id(token)
    if customer_id is None or not Customer.objects.filter(pk=customer_id, is_active=True).exists():
        return None
    return customer_id


class ChatConsumer(AsyncWebsocketConsumer):
    """One socket of one participant (customer or teacher) of one chat session."""

    heartbeat_task: asyncio.Task | None = None
    side: str | None = None

    async def connect(self):
        self.session_id = int(self.scope["url_route"]["kwargs"]["session_id"])
        token = parse_qs(self.scope.get("query_string", b"").decode("latin-1")).get("token", [""])[0]
        # Accept before checking, so the client sees the close code (a close before accept is an
        # HTTP 403 without one).
        await self.accept()
        try:
            customer_id = await database_sync_to_async(_customer_for_token)(token)
        except Exception:  # noqa: BLE001 - token store (Redis) down
            logger.warning("chat: token store unavailable", exc_info=True)
            await self.close(code=1011)
            return
        if customer_id is None:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        try:
            who = await database_sync_to_async(services.participant)(
                session_id=self.session_id, customer_id=customer_id
            )
        except (NotFound, Forbidden):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.customer_id = customer_id
        self.side = who.side
        self.group = services.group_name(self.session_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self._present()
        self.heartbeat_task = asyncio.ensure_future(self._heartbeat())

    async def disconnect(self, code):
        if self.heartbeat_task is not None:
            self.heartbeat_task.cancel()
        if self.side is None:
            return
        await self.channel_layer.group_discard(self.group, self.channel_name)
        try:
            await database_sync_to_async(presence.presence_leave)(
                session_id=self.session_id, side=self.side, channel_name=self.channel_name
            )
        except Exception:  # noqa: BLE001 - the entry expires by itself
            logger.warning("chat: presence_leave failed", exc_info=True)

    async def _present(self):
        try:
            await database_sync_to_async(presence.presence_enter)(
                session_id=self.session_id, side=self.side, channel_name=self.channel_name
            )
        except Exception:  # noqa: BLE001 - presence is best effort (offline notices may go out)
            logger.warning("chat: presence_enter failed", exc_info=True)

    async def _heartbeat(self):
        while True:
            await asyncio.sleep(presence.PRESENCE_TTL_SECONDS / 3)
            await self._present()

    async def _error(self, exc: ShopError):
        await self.send(
            text_data=json.dumps(
                {"type": "error", "code": exc.code, "message": exc.message, "detail": exc.detail}, ensure_ascii=False
            )
        )

    async def receive(self, text_data=None, bytes_data=None):
        if self.side is None:
            return
        try:
            frame = json.loads(text_data) if text_data and len(text_data) <= MAX_FRAME_CHARS else None
        except ValueError:
            frame = None
        if not isinstance(frame, dict) or frame.get("type") not in ("message", "read", "ping"):
            await self._error(InvalidInput("无法识别的消息帧。", type=["必须是 message、read 或 ping"]))
            return
        await self._present()
        try:
            if frame["type"] == "message":
                await self._send_message(frame)
            elif frame["type"] == "read":
                await self._read(frame)
            else:
                await self.send(text_data=json.dumps({"type": "pong"}))
        except ShopError as exc:
            await self._error(exc)

    async def _send_message(self, frame: dict):
        # Stored (committed) first, in a worker thread; then to every socket of the session.
        message = await database_sync_to_async(services.message_send)(
            session_id=self.session_id,
            customer_id=self.customer_id,
            content_type=frame.get("content_type"),
            content=frame.get("content"),
            duration=frame.get("duration"),
            fanout=False,
        )
        out = await database_sync_to_async(frames.message_frame)(message)
        await self.channel_layer.group_send(self.group, {"type": "chat.message", "frame": out})

    async def _read(self, frame: dict):
        up_to = frame.get("up_to")
        if isinstance(up_to, bool) or not isinstance(up_to, int) or up_to < 1:
            raise InvalidInput(up_to=["必须是正整数（消息 id）"])
        recorded = await database_sync_to_async(services.messages_mark_read)(
            session_id=self.session_id, customer_id=self.customer_id, up_to=up_to, fanout=False
        )
        if recorded:
            await self.channel_layer.group_send(
                self.group, {"type": "chat.read", "frame": frames.read_frame(up_to=recorded, by=self.side)}
            )

    # --- group events ---------------------------------------------------------------------
    async def chat_message(self, event):
        await self.send(text_data=json.dumps(event["frame"], ensure_ascii=False))

    async def chat_read(self, event):
        await self.send(text_data=json.dumps(event["frame"]))
