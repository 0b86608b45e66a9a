"""The flash sale's losers answered before Django: an ASGI gate on ``POST /api/v1/orders/confirm``.

In a 秒杀 most buyers arrive after the last unit is gone (``make bench``: about 1,460 of 2,000).
``order_confirm`` already answers them from the Redis sold-out flags (``apps.catalog.soldout``)
without PostgreSQL, but each of them still costs a whole request cycle: the hand-off to a
request thread (a2wsgi), the middleware, DRF's parsing and validation and token auth's customer
query, CPU that the winners need on a small machine. :class:`SoldOutGate` wraps the HTTP
application (``starmall/asgi.py``) and answers exactly those requests in the event loop, after
ONE Redis round trip (MGET of the token and the flags); everything else goes to Django untouched.

It answers only where Django would give the same answer, byte for byte
(``tests/orders/test_soldout_gate.py`` compares the two):

- ``POST`` to exactly :data:`CONFIRM_PATH` with no query string (DRF reads ``?format=``); a
  Host Django allows; no HTTPS redirect due (``SECURE_SSL_REDIRECT``); ``Content-Type:
  application/json`` (utf-8); an ``Accept`` the JSON renderer satisfies without parameters; no
  header name with ``_`` (a2wsgi reads it as the one with ``-``); a ``Content-Length`` equal to
  the body (without one, chunked, Django reads an empty body) of at most :data:`MAX_BODY` bytes
  and ``API_MAX_BODY_BYTES`` (beyond it, Django's 413);
- a body in the shape a mini-program sends, each value one the serializer accepts as it is
  (:func:`confirm_request`: JSON integers, not the strings DRF would also coerce);
- ``Authorization: Bearer <token>`` that Redis maps to a customer. Tokens of a deactivated
  customer are revoked (``apps.accounts.tokens.tokens_revoke_customer``) after commit, and
  retried from a ``TokenRevocation`` row by beat's sweep until Redis confirms
  (``apps.accounts.revocations``, which also finds deactivations done by SQL), so that is an
  active customer, or one deactivated less than ``BEAT_SWEEP_SECONDS`` ago whom the gate can
  only tell "sold out" (it never lets an order through);
- a flag for what is asked, judged by ``apps.catalog.soldout.refusal``, the same function
  ``order_confirm`` uses.

A confirm of this shape that names a ``flash_sale_id`` (one SKU, no coupon, no points) is a
秒杀's: ``apps.orders.api.flash_gate`` decides it in Redis instead — the flags, then the sale's
quota: the 409 of a loser or an over-limit buyer, or a winner's draft written by one Lua
script and its 200 — and passes to Django whatever it cannot answer exactly.

Anything else — another shape, no flag, a Redis error or a Redis answer slower than
:data:`REDIS_TIMEOUT_SECONDS` — goes to Django, which answers it as before. The gate never
lets an order through; it only turns away buyers the shop would turn away anyway.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

import redis.asyncio as aioredis
from django.conf import settings
from django.core.cache import cache
from django.http.request import split_domain_port, validate_host
from rest_framework.settings import api_settings

from apps.accounts.tokens import token_key
from apps.catalog import soldout
from apps.orders.api import create_gate, flash_gate
from apps.orders.cart import MAX_LINES, MAX_QUANTITY
from starmall.api.schema import MAX_ID
from starmall.errors import ShopError

logger = logging.getLogger(__name__)

CONFIRM_PATH = "/api/v1/orders/confirm"
MAX_BODY = 4096  # bytes; a one-SKU confirm is about 100
REDIS_TIMEOUT_SECONDS = 0.25  # slower than this, Django answers (and meets Redis's trouble itself)
# Per worker process. A request waits up to REDIS_TIMEOUT_SECONDS for a free one, then goes to
# Django: sending a 秒杀's buyers to Django the moment 32 were in flight (the former rule) made the
# pool's limit, not Redis, decide who took the expensive path (docs/PERFORMANCE.md).
REDIS_MAX_CONNECTIONS = 64
WARN_EVERY_SECONDS = 10.0  # one warning per interval while Redis fails, not one per buyer
_ID_FIELDS = ("address_id", "coupon_id", "flash_sale_id")
_FIELDS = frozenset({"items", "use_points", *_ID_FIELDS})
_ACCEPTS = {"*/*", "application/*", "application/json"}


def _int_in(value, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high  # noqa: E721 - bool is not a number here


def confirm_request(data) -> tuple[dict[int, int], int | None] | None:
    """``({sku_id: units}, flash_sale_id)`` for a parsed confirm body that ``ConfirmInSerializer``
    accepts exactly as it is, with ``items`` (not ``cart_item_ids``) and no ``slot_id``; None
    for anything else, which Django then judges. Units of a SKU named twice are added up, as
    ``order_confirm`` does."""
    if not isinstance(data, dict) or not data.keys() <= _FIELDS:
        return None
    items = data.get("items")
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_LINES:
        return None
    quantities: dict[int, int] = {}
    for item in items:
        if not isinstance(item, dict) or item.keys() != {"sku_id", "quantity"}:
            return None
        sku_id, quantity = item["sku_id"], item["quantity"]
        if not _int_in(sku_id, 1, MAX_ID) or not _int_in(quantity, 1, MAX_QUANTITY):
            return None
        quantities[sku_id] = quantities.get(sku_id, 0) + quantity
    for name in _ID_FIELDS:
        value = data.get(name)
        if value is not None and not _int_in(value, 1, MAX_ID):
            return None
    points = data.get("use_points", 0)
    if not isinstance(points, bool) and not _int_in(points, 0, MAX_ID):
        return None
    return quantities, data.get("flash_sale_id")


def _json_body(payload: dict) -> bytes:
    """Rendered as DRF's JSONRenderer renders it (UNICODE_JSON, COMPACT_JSON)."""
    return json.dumps(
        payload,
        ensure_ascii=not api_settings.UNICODE_JSON,
        separators=(",", ":") if api_settings.COMPACT_JSON else None,
        allow_nan=not api_settings.STRICT_JSON,
    ).encode()


class SoldOutGate:
    """ASGI middleware: a sold-out confirm answered from Redis, everything else passed to ``app``.

    ``app`` is the shop's HTTP application (Django behind a2wsgi). One Redis connection pool per
    worker process, made on first use in its event loop from the cache's ``LOCATION``.
    """

    def __init__(self, app) -> None:
        self.app = app
        self._redis: tuple[asyncio.AbstractEventLoop, aioredis.Redis] | None = None
        self._quiet_until = 0.0  # time.monotonic() before which Redis failures are not logged again
        self._database = create_gate.Database()  # PostgreSQL for a winner's create (apps.orders.api.create_gate)

    async def __call__(self, scope, receive, send) -> None:
        limit = _body_limit()
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope["path"] not in (CONFIRM_PATH, create_gate.CREATE_PATH)
            or not 0 < _declared_length(scope) <= limit
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
                self._warn("skipped", exc)
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

    async def answer(self, scope, body: bytes) -> tuple[int, list, bytes] | None:
        """``(status, headers, body)`` of the sold-out answer, or None: Django answers."""
        if scope.get("query_string"):
            return None  # DRF reads ?format= (URL_FORMAT_OVERRIDE): an unknown one is its 404
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            if b"_" in name:
                return None  # a2wsgi maps "_" like "-" and joins the two: X_Forwarded_Proto is HTTP_X_FORWARDED_PROTO
            if name in headers and name in (
                b"authorization",
                b"content-type",
                b"accept",
                b"host",
                b"x-forwarded-proto",
                b"x-forwarded-host",
                b"content-length",
            ):
                return None  # repeated: leave the reading of it to Django
            headers[name] = value
        length = headers.get(b"content-length", b"")
        if not length.isdigit() or int(length) != len(body) or int(length) > _body_limit():
            return None  # no Content-Length (chunked): Django reads an empty body; too long: its 413
        secure = _is_secure(scope, headers)
        if not _host_allowed(headers) or (settings.SECURE_SSL_REDIRECT and not secure):
            return None
        # Spaces only around the ";" (DRF's parse): "application/ json" is Django's 415.
        content_type = ";".join(
            part.strip() for part in headers.get(b"content-type", b"").decode("latin-1").lower().split(";")
        )
        if content_type not in ("application/json", "application/json;charset=utf-8"):
            return None
        accept = headers.get(b"accept")
        if accept is not None and accept.decode("latin-1").strip().lower() not in _ACCEPTS:
            return None
        auth = headers.get(b"authorization", b"").decode("latin-1").split()
        if len(auth) != 2 or auth[0] != "Bearer":
            return None
        try:
            data = json.loads(body.decode("utf-8"), parse_constant=_no_constants)
        except (ValueError, RecursionError):
            return None
        if scope["path"] == create_gate.CREATE_PATH:  # a 秒杀 winner's create (apps.orders.api.create_gate)
            order = await create_gate.answer(self._client(), self._database, auth[1], data)
            if order is None:
                return None
            payload = _json_body(order)
            return 201, _response_headers(secure, len(payload), allow=create_gate.ALLOW), payload
        parsed = confirm_request(data)
        if parsed is None:
            return None
        quantities, flash_sale_id = parsed
        decided = flash_gate.FLAGS
        if flash_gate.flash_shape(data, quantities):  # a 秒杀: decided in Redis (apps.orders.api.flash_gate)
            decided = await flash_gate.answer(self._client(), data, quantities, auth[1])
        if decided is None:
            return None
        if isinstance(decided, ShopError):
            refused = decided
        elif decided is not flash_gate.FLAGS:
            payload = _json_body(decided)
            return 200, _response_headers(secure, len(payload)), payload
        else:
            keys = soldout.keys_for(quantities, flash_sale_id)
            values = await self._mget([cache.make_key(token_key(auth[1]))] + [cache.make_key(k) for k in keys])
            if values is None or values[0] is None:
                return None  # unknown token (or Redis trouble): Django's 401 / 503
            refused = soldout.refusal(
                {k: int(v) for k, v in zip(keys, values[1:], strict=True) if v is not None}, quantities, flash_sale_id
            )
            if refused is None:
                return None
        payload = _json_body({"code": refused.code, "message": refused.message, "detail": refused.detail})
        return refused.status, _response_headers(secure, len(payload)), payload

    async def aclose(self) -> None:
        """Close the worker's PostgreSQL pool and Redis client (tests run each request in a loop of its own)."""
        await self._database.close()
        if self._redis is not None:
            client, self._redis = self._redis[1], None
            await client.aclose()

    def _client(self) -> aioredis.Redis:
        """The worker's Redis client for the running event loop (a pool belongs to one loop)."""
        loop = asyncio.get_running_loop()
        if self._redis is None or self._redis[0] is not loop:
            location = settings.CACHES["default"]["LOCATION"]
            pool = aioredis.BlockingConnectionPool.from_url(
                location if isinstance(location, str) else location[0],
                socket_timeout=REDIS_TIMEOUT_SECONDS,
                socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
                max_connections=REDIS_MAX_CONNECTIONS,
                timeout=REDIS_TIMEOUT_SECONDS,  # waiting for a free connection: then Django answers
            )
            self._redis = (loop, aioredis.Redis.from_pool(pool))
        return self._redis[1]

    async def _mget(self, keys: list[str]) -> list | None:
        try:
            return await self._client().mget(keys)
        except Exception as exc:  # noqa: BLE001 - down, slow, refusing or pool full: Django answers
            self._warn("Redis unavailable", exc)
            return None

    def _warn(self, what: str, exc: Exception) -> None:
        """One warning per WARN_EVERY_SECONDS, not one per buyer of a flash sale."""
        now = time.monotonic()
        if now >= self._quiet_until:
            self._quiet_until = now + WARN_EVERY_SECONDS
            logger.warning(
                "sold-out gate: %s (%s: %s); Django answers, next warning in %d s at the earliest",
                what,
                type(exc).__name__,
                exc,
                WARN_EVERY_SECONDS,
            )


def _declared_length(scope) -> int:
    """The request's one ``Content-Length`` in bytes; -1 when absent, repeated or not a number."""
    values = [value for name, value in scope["headers"] if name == b"content-length"]
    return int(values[0]) if len(values) == 1 and values[0].isdigit() else -1


def _body_limit() -> int:
    """Bytes of body the gate reads: MAX_BODY, or less when the API's limit is lower (Django's 413)."""
    return min(MAX_BODY, settings.API_MAX_BODY_BYTES)


def _no_constants(name: str):
    raise ValueError(f"{name} is not JSON")  # NaN / Infinity: DRF's strict parser refuses them


def _is_secure(scope, headers: dict[bytes, bytes]) -> bool:
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


def _response_headers(secure: bool, length: int, allow: bytes = b"POST, OPTIONS") -> list[tuple[bytes, bytes]]:
    """The headers Django's stack puts on this answer (DRF, SecurityMiddleware, X-Frame-Options);
    ``allow``: the view's methods as DRF lists them."""
    headers = [(b"content-type", b"application/json"), (b"allow", allow)]
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
        headers.append((b"referrer-policy", (policy if isinstance(policy, str) else ",".join(policy)).encode()))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        headers.append((b"cross-origin-opener-policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY.encode()))
    return headers
