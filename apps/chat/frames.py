"""The chat's wire form of a stored message, shared by the HTTP API (``api.serializers``) and
the WebSocket frames (``services``, ``consumers``): API.md ``{"id", "session_id", "sender",
"content_type", "content", "duration", "created_at"}``, ``created_at`` in Shanghai time."""

from django.utils import timezone

from apps.chat.models import ChatMessage

MESSAGE_FIELDS = ("id", "session_id", "sender", "content_type", "content", "duration", "created_at")


def message_data(message: ChatMessage) -> dict:
    """One message as API.md shows it."""
    data = {name: getattr(message, name) for name in MESSAGE_FIELDS}
    data["created_at"] = timezone.localtime(message.created_at).isoformat()
    return data


def message_frame(message: ChatMessage) -> dict:
    """The socket's ``{"type": "message", "message": {...}}`` frame of a stored message."""
    return {"type": "message", "message": message_data(message)}


def read_frame(*, up_to: int, by: str) -> dict:
    """The socket's ``{"type": "read", "up_to", "by"}`` frame: ``by`` read up to message ``up_to``."""
    return {"type": "read", "up_to": up_to, "by": by}
