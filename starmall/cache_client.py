"""django-redis's client, keeping ONE redis-py client per Redis server for the whole process.

Django gives each request context its own cache object (``django.core.cache.caches`` is a
context-local, and under ASGI every request is a new context), and django-redis builds a new
``redis.Redis`` for each cache object. redis-py 8's constructor (its response-callback table,
its event dispatcher) was 4-5 % of the web workers' CPU in the flash sale (py-spy
``--gil`` on both workers). A ``redis.Redis`` is safe to share between threads: it takes a
connection from its pool for each command, and django-redis already shares the pools per process.
"""

from __future__ import annotations

from django_redis.client import DefaultClient, SentinelClient
from redis import Redis


class ProcessWideClient(DefaultClient):
    """``CACHES[...]["OPTIONS"]["CLIENT_CLASS"]``: DefaultClient whose ``connect`` returns the
    process's client for that server and those options, made on first use (after a fork a
    redis-py pool opens new connections by itself)."""

    _shared: dict[tuple[str, str], Redis] = {}

    def connect(self, index: int = 0) -> Redis:
        key = (self._server[index], repr(sorted((name, repr(value)) for name, value in self._options.items())))
        client = self._shared.get(key)
        if client is None:
            client = self._shared.setdefault(key, super().connect(index))
        return client

    def close(self, **kwargs) -> None:
        """Never disconnect at a request's end (``DJANGO_REDIS_CLOSE_CONNECTION``): the pool is
        the process's, in use by other threads' commands."""


class ProcessWideSentinelClient(ProcessWideClient, SentinelClient):
    """:class:`ProcessWideClient` for a Redis Sentinel group (``REDIS_URL=sentinel://...``,
    ``starmall.redis_urls``): one client per process, asking the sentinels for the master."""


_default: tuple[dict, object] | None = None  # (the CACHES["default"] it was made for, the cache object)


def default():
    """The process's one cache object for ``CACHES["default"]``, for code in the event loop (the
    ASGI gates): there every request is a new context, and ``django.core.cache.cache`` builds a
    new ``RedisCache`` for each (py-spy: 4 % of the notify gate's event loop in the notification
    storm). Made again when the settings' ``CACHES["default"]`` is replaced (``override_settings``).
    Its key function and its client's ``encode`` / ``decode`` hold no per-request state."""
    global _default
    from django.conf import settings
    from django.core.cache import caches

    config = settings.CACHES["default"]
    made = _default
    if made is None or made[0] is not config:
        made = _default = (config, caches.create_connection("default"))
    return made[1]


def make_key(key: str):
    """``cache.make_key(key)`` (KEY_PREFIX, VERSION and KEY_FUNCTION, as django-redis applies
    them) from :func:`default`."""
    return default().make_key(key)


def redis_client() -> Redis:
    """The process's redis-py client of ``CACHES["default"]``: what django-redis'
    ``get_redis_connection("default")`` returns, without building a cache object for the
    request context first (25 µs each time under ASGI and on the gate's order threads)."""
    return default().client.get_client(write=True)
