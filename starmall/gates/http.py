"""What the ASGI gates in front of Django share: the ASGI plumbing (:class:`RedisGate`), the
checks a gate makes before it may answer, and the headers Django's stack puts on an answer.

A gate answers a request from Redis only where Django would give the same answer byte for byte;
anything else (and any Redis trouble) goes to Django with its body replayed. Where the answer
depends on Django's settings, Django's own code decides, not a copy of it: the Host check and
HTTPS are ``WSGIRequest.get_host()`` and ``is_secure()`` on an environ built from the scope; the
response headers are those ``settings.MIDDLEWARE``'s header-adding middleware (:data:`_HEADER_MIDDLEWARE`)
put on an ``HttpResponse``, computed once per shape and forgotten when a setting changes.
"""

from __future__ import annotations

import asyncio
import logging
import time

import redis.asyncio as aioredis
from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.signals import setting_changed
from django.http import HttpRequest, HttpResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware
from django.utils.module_loading import import_string

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
# The middleware whose process_response adds headers to a view's answer (response_headers).
_HEADER_MIDDLEWARE = (SecurityMiddleware, CommonMiddleware, XFrameOptionsMiddleware)
_SHAPES: dict[tuple, tuple[list[tuple[bytes, bytes]], int | None]] = {}  # response_headers' cache
# A header's name in the WSGI environ (a2wsgi's spelling), for _request.
_META_NAMES = {b"content-type": "CONTENT_TYPE", b"content-length": "CONTENT_LENGTH"}


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
    is allowed (``get_host()`` raises no DisallowedHost, else its 400), no HTTPS redirect is due
    (``SECURE_SSL_REDIRECT``), no ``CommonMiddleware`` rule applies (``DISALLOWED_USER_AGENTS``'
    403, ``PREPEND_WWW``'s redirect), and DRF's content negotiation takes the ``Accept`` as it is
    (else its 406). A request without ``Host`` is Django's (it would name the server instead)."""
    if settings.SECURE_SSL_REDIRECT and not secure:
        return False
    if settings.DISALLOWED_USER_AGENTS or settings.PREPEND_WWW:
        return False
    try:
        _request(headers.items(), "https" if secure else "http").get_host()
    except DisallowedHost:
        return False
    accept = headers.get(b"accept")
    return accept is None or accept.decode("latin-1").strip().lower() in _ACCEPTS


def is_secure(scope, headers: dict[bytes, bytes]) -> bool:
    """``WSGIRequest.is_secure()`` of the request Django would see (``SECURE_PROXY_SSL_HEADER``
    when set and sent, else the scope's scheme). ``headers`` is :func:`plain_headers`' answer;
    the scope's own headers are read, a repeated one joined as a2wsgi joins it."""
    return _request(scope["headers"], scope.get("scheme", "http")).is_secure()


def _request(headers, scheme: str) -> _Request:
    """The request whose ``get_host()`` and ``is_secure()`` Django would call: the ``(name,
    value)`` byte pairs as a2wsgi puts them in its environ. The server's name is not known
    here, so a request without ``Host`` is a DisallowedHost."""
    meta = {"wsgi.url_scheme": scheme, "SERVER_NAME": "", "SERVER_PORT": ""}
    for name, value in headers:
        key = _META_NAMES.get(name)
        if key is None:
            key = "HTTP_" + name.decode("latin-1").upper().replace("-", "_")
            if len(_META_NAMES) < 256:  # the usual few; not every name a client makes up
                _META_NAMES[name] = key
        value = value.decode("latin-1")
        meta[key] = meta[key] + "," + value if key in meta else value
    return _Request(meta)


class _Request(HttpRequest):
    """``HttpRequest`` over a WSGI environ as ``WSGIRequest`` makes it, less what ``get_host()``
    and ``is_secure()`` never read (path, body, query): its ``__init__`` costs 4-7 us, this 0.3."""

    def __init__(self, meta: dict[str, str]) -> None:  # as WSGIRequest: not HttpRequest.__init__
        self.META = meta

    def _get_scheme(self) -> str:
        return self.META["wsgi.url_scheme"]  # WSGIRequest's


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
    """The headers Django's stack puts on a DRF view's answer (not a 404) of ``length`` bytes:
    ``content_type``, ``drf`` (:func:`view_headers`), then what the header-adding middleware of
    ``settings.MIDDLEWARE`` adds (X-Frame-Options, Content-Length, SecurityMiddleware's), in
    Django's order. Computed by that middleware once per ``(content_type, secure, drf)``."""
    key = (content_type, secure, tuple(drf))
    shape = _SHAPES.get(key)
    if shape is None:
        shape = _SHAPES[key] = _shape(content_type, secure, drf)
    headers, at = shape
    if at is None:
        return list(headers)
    return [*headers[:at], (b"content-length", str(length).encode()), *headers[at + 1 :]]


def _shape(content_type: bytes, secure: bool, drf) -> tuple[list[tuple[bytes, bytes]], int | None]:
    """``(headers, index of Content-Length or None)`` of an ``HttpResponse`` with ``content_type``
    and ``drf`` after the ``process_response`` of each middleware in ``settings.MIDDLEWARE``
    that is one of :data:`_HEADER_MIDDLEWARE` (or a subclass), last first as Django runs them,
    for a request that is or is not ``secure``."""
    response = HttpResponse(content_type=content_type.decode("latin-1"))
    for name, value in drf:
        response.headers[name.decode("latin-1")] = value.decode("latin-1")
    request = _request((), "https" if secure else "http")  # no proxy header: the scheme decides
    for path in reversed(settings.MIDDLEWARE):
        middleware = import_string(path)
        if issubclass(middleware, _HEADER_MIDDLEWARE):
            response = middleware(_no_view).process_response(request, response)
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in response.items()]
    names = [name for name, _value in headers]
    return headers, names.index(b"content-length") if b"content-length" in names else None


def _no_view(request):
    raise AssertionError("only process_response is called")


def _forget_shapes(**kwargs) -> None:
    """Settings changed (tests): the middleware would add other headers."""
    _SHAPES.clear()


setting_changed.connect(_forget_shapes)
