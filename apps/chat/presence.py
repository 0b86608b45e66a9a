"""Who is connected to a chat session right now: live sockets kept in Redis with a TTL.

One sorted set per (session, side): member = the socket's channel name, score = the moment its
presence expires (Unix seconds). A socket enters on connect, refreshes every
``PRESENCE_TTL_SECONDS / 3`` (server heartbeat, and on every client frame), and leaves on
disconnect; a process that dies leaves members that simply expire. Shared by every ASGI process.
"""

from __future__ import annotations

import time

from django.conf import settings

from starmall import cache_client

PRESENCE_TTL_SECONDS = 60


def _key(session_id: int, side: str) -> str:
    return f"{settings.CACHES['default']['KEY_PREFIX']}:chat:presence:{session_id}:{side}"


def presence_enter(*, session_id: int, side: str, channel_name: str) -> None:
    """Mark one socket of ``side`` live in the session for the next PRESENCE_TTL_SECONDS (also the heartbeat)."""
    key = _key(session_id, side)
    now = time.time()
    pipe = cache_client.redis_client().pipeline()
    pipe.zadd(key, {channel_name: now + PRESENCE_TTL_SECONDS})
    pipe.zremrangebyscore(key, "-inf", now)  # members of dead processes
    pipe.expire(key, PRESENCE_TTL_SECONDS * 2)
    pipe.execute()


def presence_leave(*, session_id: int, side: str, channel_name: str) -> None:
    """The socket closed."""
    cache_client.redis_client().zrem(_key(session_id, side), channel_name)


def is_online(*, session_id: int, side: str) -> bool:
    """True while ``side`` has at least one live socket on the session."""
    return cache_client.redis_client().zcount(_key(session_id, side), time.time(), "+inf") > 0
