"""What the ASGI gates in front of Django share: reading a small POST body, telling whether
Django would answer the request itself in some other way, and the headers Django puts on an
answer.

A gate (``starmall.gates.orders.OrderGate``, ``starmall.gates.payment_notify.PaymentNotifyGate``)
wraps the shop's HTTP application (``starmall/asgi.py``) and answers one kind of request from
Redis in the event loop, before a request thread, the middleware and the view: only where
Django would give the same answer, byte for byte. Everything else, a Redis error, a Redis
answer slower than the gate's timeout or a full connection pool, goes to Django untouched (the
body it read is replayed), with one warning per :data:`WARN_EVERY_SECONDS`, not one per request.

:class:`RedisGate` is the ASGI plumbing (path and method, the body up to a limit, the replay,
one Redis pool per worker process and event loop); the functions below are the checks a gate
makes before it may answer at all: no query string, single plain headers, an allowed Host, no
HTTPS redirect due, an ``Accept`` DRF's JSON renderer satisfies, no user-agent or ``www.``
rule of ``CommonMiddleware`` in force.
"""

from __future__ import annotations

import asyncio
import logging
import time

import redis.asyncio as aioredis
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from starmall.gates import postgres

WARN_EVERY_SECONDS = 10.0  # one warning per interval while Redis fails, not one per request
# Per gate and worker process. A request waits up to the gate's Redis timeout for a free one, then
# goes to Django: sending a 秒杀's buyers to Django the moment 32 were in flight (the former rule)
# made the pool's limit, not Redis, decide who took the expensive path (docs/PERFORMANCE.md).
REDIS_MAX_CONNECTIONS = 64
WARM_REDIS_CONNECTIONS = 16  # opened at the worker's start (RedisGate.warm)
_ACCEPTS = {"*/*", "application/*", "application/json"}  # DRF's JSONRenderer takes these as they are
# Headers a gate reads: a repeated one is left to Django (which joins or picks as WSGI does).
_SINGLE = (
    b"authorization",
    b"content-type",
    b"accept",
    b"host",
    b"x-forwarded-proto",
    b"x-forwarded-host",
    b"content-length",
    b"user-agent",
)


class RedisGate:
    """ASGI middleware: ``POST`` to one of :attr:`paths` may be answered by :meth:`answer`;
    everything else, and whatever :meth:`answer` returns None for, goes to ``app`` with its body
    intact.

    Subclasses set :attr:`paths`, :attr:`label` (the warnings' prefix) and :attr:`logger`, and
    define :meth:`answer`, :meth:`body_limit` (bytes; a longer or chunked body is Django's at
    once) and :meth:`redis_timeout` (seconds; read when the worker's pool is made). A gate that
    writes to PostgreSQL sets ``_database`` (a ``postgres.Database``): :meth:`warm` and
    :meth:`aclose` open and close it with the Redis client.
    """

    paths: tuple[str, ...] = ()
    label = "gate"
    logger = logging.getLogger(__name__)

    def __init__(self, app) -> None:
        self.app = app
        self._redis: tuple[asyncio.AbstractEventLoop, aioredis.Redis] | None = None
        self._database: postgres.Database | None = None
        self._quiet_until = 0.0  # time.monotonic() before which Redis failures are not logged again

    def body_limit(self) -> int:
        raise NotImplementedError

    def redis_timeout(self) -> float:
        raise NotImplementedError

    async def answer(self, scope, body: bytes) -> tuple[int, list, bytes] | None:
        """``(status, headers, body)`` of the answer Django would give, or None: Django answers."""
        raise NotImplementedError

    async def __call__(self, scope, receive, send) -> None:
        limit = self.body_limit()
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope["path"] not in self.paths
            or not 0 < declared_length(scope) <= limit
        ):  # none (chunked) or too long: Django's
            await self.app(scope, receive, send)
            return
        messages, body, complete = [], b"", False
        while len(body) <= limit:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body", False):
                complete = True
                break
        answer = None
        if complete and len(body) <= limit:
            try:
                answer = await self.answer(scope, body)
            except Exception as exc:  # the gate is an optimisation: Django answers whatever it did not
                self.warn("skipped", exc)
        if answer is None:
            await self.app(scope, self._replay(messages, receive), send)
            return
        status, headers, payload = answer
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    @staticmethod
    def _replay(messages: list, receive):
        pending = list(messages)

        async def replay():
            return pending.pop(0) if pending else await receive()

        return replay

    def client(self) -> aioredis.Redis:
        """The worker's Redis client for the running event loop (a pool belongs to one loop),
        made from the cache's ``LOCATION``."""
        loop = asyncio.get_running_loop()
        if self._redis is None or self._redis[0] is not loop:
            location = settings.CACHES["default"]["LOCATION"]
            timeout = self.redis_timeout()
            pool = aioredis.BlockingConnectionPool.from_url(
                location if isinstance(location, str) else location[0],
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                max_connections=REDIS_MAX_CONNECTIONS,
                timeout=timeout,  # waiting for a free connection; then Django answers
            )
            self._redis = (loop, aioredis.Redis.from_pool(pool))
        return self._redis[1]

    async def warm(self) -> None:
        """Open :data:`WARM_REDIS_CONNECTIONS` Redis connections and the PostgreSQL pool now (the
        worker's start-up, ``starmall/asgi.py``): the first burst after a start — a 秒杀 opening,
        a notification storm — otherwise pays for connecting. Errors are warned and left to the
        first requests."""
        client = self.client()
        try:
            await asyncio.gather(*(client.ping() for _ in range(WARM_REDIS_CONNECTIONS)))
        except Exception as exc:  # noqa: BLE001 - Redis down at start: requests connect (or pass) later
            self.warn("could not warm Redis", exc)
        if self._database is not None:
            await self._database.warm()

    async def aclose(self) -> None:
        """Close the worker's PostgreSQL pool and Redis client (tests run each request in a loop
        of its own; the worker's shut-down)."""
        if self._database is not None:
            await self._database.close()
        if self._redis is not None:
            (loop, client), self._redis = self._redis, None
            if loop is asyncio.get_running_loop():  # one of an ended loop cannot be closed: dropped
                await client.aclose()

    def warn(self, what: str, exc: Exception) -> None:
        """One warning per WARN_EVERY_SECONDS, not one per request."""
        now = time.monotonic()
        if now >= self._quiet_until:
            self._quiet_until = now + WARN_EVERY_SECONDS
            self.logger.warning(
                "%s: %s (%s: %s); Django answers, next warning in %d s at the earliest",
                self.label,
                what,
                type(exc).__name__,
                exc,
                WARN_EVERY_SECONDS,
            )


def declared_length(scope) -> int:
    """The request's one ``Content-Length`` in bytes; -1 when absent, repeated or not a number."""
    values = [value for name, value in scope["headers"] if name == b"content-length"]
    return int(values[0]) if len(values) == 1 and values[0].isdigit() else -1


def plain_headers(scope, body: bytes, limit: int) -> dict[bytes, bytes] | None:
    """``{name: value}`` of a request Django reads as the gate does, or None: Django answers.

    None for a query string (DRF reads ``?format=``: an unknown one is its 404), a header name
    with ``_`` (a2wsgi reads it as the one with ``-`` and joins the two), a header the gates
    read sent twice, a ``Content-Length`` other than the body's length (without one, chunked,
    Django reads an empty body) or over ``limit`` bytes.
    """
    if scope.get("query_string"):
        return None
    headers: dict[bytes, bytes] = {}
    for name, value in scope["headers"]:
        if b"_" in name:
            return None  # X_Forwarded_Proto is HTTP_X_FORWARDED_PROTO, joined with X-Forwarded-Proto
        if name in headers and name in _SINGLE:
            return None
        headers[name] = value
    length = headers.get(b"content-length", b"")
    if not length.isdigit() or int(length) != len(body) or int(length) > limit:
        return None
    return headers


def django_passes(headers: dict[bytes, bytes], secure: bool) -> bool:
    """True when Django's middleware lets the request through to the view unchanged: the Host
    is allowed (else its 400), no HTTPS redirect is due (``SECURE_SSL_REDIRECT``), no
    ``CommonMiddleware`` rule applies (``DISALLOWED_USER_AGENTS``' 403, ``PREPEND_WWW``'s
    redirect), and DRF's content negotiation takes the ``Accept`` as it is (else its 406)."""
    if not _host_allowed(headers) or (settings.SECURE_SSL_REDIRECT and not secure):
        return False
    if settings.DISALLOWED_USER_AGENTS or settings.PREPEND_WWW:
        return False
    accept = headers.get(b"accept")
    return accept is None or accept.decode("latin-1").strip().lower() in _ACCEPTS


def is_secure(scope, headers: dict[bytes, bytes]) -> bool:
    """``HttpRequest.is_secure()``: ``SECURE_PROXY_SSL_HEADER`` when set and sent, else the scheme."""
    if settings.SECURE_PROXY_SSL_HEADER:
        header, secure_value = settings.SECURE_PROXY_SSL_HEADER
        name = header.removeprefix("HTTP_").lower().replace("_", "-").encode("latin-1")
        if name in headers:
            return headers[name].decode("latin-1").split(",", 1)[0].strip() == secure_value
    return scope.get("scheme") == "https"


def _host_allowed(headers: dict[bytes, bytes]) -> bool:
    """``HttpRequest.get_host()`` would not raise DisallowedHost (else Django's 400 answers)."""
    raw = None
    if settings.USE_X_FORWARDED_HOST:
        raw = headers.get(b"x-forwarded-host")
    raw = raw if raw is not None else headers.get(b"host")
    if not raw:
        return False
    domain, _port = split_domain_port(raw.decode("latin-1"))
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)


def view_headers(view_class) -> list[tuple[bytes, bytes]]:
    """The headers DRF puts on every answer of the APIView ``view_class`` (``Allow``, and
    ``Vary`` with several renderers). Read from the class, not written out: ``@api_view``
    orders ``Allow`` by iterating a set, so "POST, OPTIONS" in one process is "OPTIONS, POST"
    in another (string hashes are salted per process). The view is set up as ``as_view()`` sets
    it up (``View.setup``: a view with ``get`` answers ``HEAD`` too, and lists it)."""
    view = view_class()
    view.setup(None)
    return [(name.lower().encode(), value.encode()) for name, value in view.default_response_headers.items()]


def response_headers(
    content_type: bytes, secure: bool, length: int, drf: list[tuple[bytes, bytes]]
) -> list[tuple[bytes, bytes]]:
    """The headers Django's stack puts on a DRF view's answer of ``length`` bytes: ``drf``
    (:func:`view_headers`), then SecurityMiddleware's and X-Frame-Options."""
    headers = [(b"content-type", content_type), *drf]
    if settings.X_FRAME_OPTIONS:
        headers.append((b"x-frame-options", settings.X_FRAME_OPTIONS.encode()))
    headers.append((b"content-length", str(length).encode()))
    if secure and settings.SECURE_HSTS_SECONDS:
        value = f"max-age={settings.SECURE_HSTS_SECONDS}"
        if settings.SECURE_HSTS_INCLUDE_SUBDOMAINS:
            value += "; includeSubDomains"
        if settings.SECURE_HSTS_PRELOAD:
            value += "; preload"
        headers.append((b"strict-transport-security", value.encode()))
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        headers.append((b"x-content-type-options", b"nosniff"))
    if settings.SECURE_REFERRER_POLICY:
        policy = settings.SECURE_REFERRER_POLICY
        values = [v.strip() for v in policy.split(",")] if isinstance(policy, str) else policy
        headers.append((b"referrer-policy", ",".join(values).encode()))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        headers.append((b"cross-origin-opener-policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY.encode()))
    return headers
