from starmall import messages
from starmall.errors import ShopError


class Forbidden(ShopError):
    """Signed in, but this is not the caller's to see or do (403 ``forbidden``): someone else's
    chat session, the teacher's schedule for a non-teacher."""

    code = "forbidden"
    status = 403
    message = messages.FORBIDDEN


class ChatThrottled(ShopError):
    """More than ``CHAT_MESSAGES_PER_MINUTE`` messages from one user this minute (429 ``throttled``)."""

    code = "throttled"
    status = 429
    message = "发送消息过于频繁，请稍后再试。"
