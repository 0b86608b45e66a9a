"""Orders answered before Django: an ASGI gate on ``POST /api/v1/orders/confirm`` and ``/orders``.

In a 秒杀 most buyers arrive after the last unit is gone, and each would cost Django a whole request
cycle. :class:`OrderGate` reads these two requests in the event loop and answers from Redis what Redis
decides — a sold-out flag's 409 (``apps.catalog.soldout.refusal``, the rule ``order_confirm`` uses), a
秒杀's confirm (``flash_confirm``) — and hands the rest to the functions Django's views call, on the
worker's order threads: ``order_confirm`` (``confirms``) and ``orders_create`` (``creates``). It
answers only where Django would answer the same, byte for byte; anything else (another body shape, an
unknown token, Redis trouble) goes to Django. The list and its tests: docs/GATES.md.
"""

from __future__ import annotations

import json
import logging

from django.conf import settings
from rest_framework.settings import api_settings

from apps.accounts.tokens import token_key
from apps.catalog import soldout
from apps.orders.api.views import OrderConfirmView, OrderListCreateView
from apps.orders.cart import MAX_LINES, MAX_QUANTITY
from starmall import cache_client
from starmall.api.exceptions import error_body
from starmall.api.schema import MAX_ID
from starmall.errors import ShopError
from starmall.gates import confirms, creates, flash_confirm, http, threads

logger = logging.getLogger(__name__)

CONFIRM_PATH = "/api/v1/orders/confirm"
MAX_BODY = 4096  # bytes; a one-SKU confirm is about 100
REDIS_TIMEOUT_SECONDS = 0.25  # slower than this, Django answers (and meets Redis's trouble itself)
_ID_FIELDS = ("address_id", "coupon_id", "flash_sale_id")
_FIELDS = frozenset({"items", "use_points", *_ID_FIELDS})


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
    """Rendered as DRF's JSONRenderer renders it (UNICODE_JSON, COMPACT_JSON, and U+2028/U+2029
    escaped as it always escapes them: an address or a remark may hold them)."""
    text = json.dumps(
        payload,
        ensure_ascii=not api_settings.UNICODE_JSON,
        separators=(",", ":") if api_settings.COMPACT_JSON else None,
        allow_nan=not api_settings.STRICT_JSON,
    )
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()


class OrderGate(http.RedisGate):
    """ASGI middleware: confirms and creates answered before Django (module), the rest passed to ``app``.

    ``app`` is the shop's HTTP application (Django behind a2wsgi). One Redis connection pool per
    worker process, made on first use in its event loop from the cache's ``LOCATION``
    (``starmall.gates.http.RedisGate``).
    """

    paths = (CONFIRM_PATH, creates.CREATE_PATH)
    label = "sold-out gate"
    logger = logger

    def __init__(self, app) -> None:
        super().__init__(app)
        self._drf_headers = http.view_headers(OrderConfirmView)  # DRF's Allow, as Django sends it
        self._create_headers = http.view_headers(OrderListCreateView)
        self._database = threads.OrderThreads()  # where the order services run (opened and closed with the gate)
        self._creates = creates.batches(self._database, self.warn)  # creates arriving together: one call
        self._confirms = confirms.batches(self._database, self.warn)

    def body_limit(self) -> int:
        return _body_limit()

    async def aclose(self) -> None:
        """Finish the creates under way, then close the worker's pool and Redis client."""
        await self._creates.drain()
        await self._confirms.drain()
        await super().aclose()

    def redis_timeout(self) -> float:
        return REDIS_TIMEOUT_SECONDS

    async def answer(self, scope, body: bytes) -> tuple[int, list, bytes] | None:
        """``(status, headers, body)`` of the answer Django would give, or None: Django answers."""
        headers = http.plain_headers(scope, body, _body_limit())
        if headers is None:
            return None
        secure = http.is_secure(scope, headers)
        if not http.django_passes(headers, secure):
            return None
        # Spaces only around the ";" (DRF's parse): "application/ json" is Django's 415.
        content_type = ";".join(
            part.strip() for part in headers.get(b"content-type", b"").decode("latin-1").lower().split(";")
        )
        if content_type not in ("application/json", "application/json;charset=utf-8"):
            return None
        auth = headers.get(b"authorization", b"").decode("latin-1").split()
        if len(auth) != 2 or auth[0] != "Bearer":
            return None
        try:
            data = json.loads(body.decode("utf-8"), parse_constant=_no_constants)
        except (ValueError, RecursionError):
            return None
        if scope["path"] == creates.CREATE_PATH:  # handed to the one create (starmall.gates.creates)
            made = await creates.answer(self.client(), self._creates, auth[1], data)
            return self._answer(made, secure, self._create_headers)
        return self._answer(await self._confirm(data, auth[1]), secure, self._drf_headers)

    async def _confirm(self, data, token: str):
        """A confirm's ``(200, body)``, its refusal (a ShopError), or None (Django): a 秒杀 decided
        in Redis (``flash_confirm``), a sold-out flag's 409, else ``order_confirm`` itself on the
        order threads (``confirms``)."""
        parsed = confirm_request(data)
        if parsed is None:
            return None
        quantities, flash_sale_id = parsed
        if flash_confirm.flash_shape(data, quantities):
            decided = await flash_confirm.answer(self.client(), data, quantities, token)
            if decided is not flash_confirm.FLAGS:
                return decided if decided is None or isinstance(decided, ShopError) else (200, decided)
        keys = soldout.keys_for(quantities, flash_sale_id)
        values = await self._mget([cache_client.make_key(token_key(token))] + [cache_client.make_key(k) for k in keys])
        if values is None or values[0] is None:
            return None  # unknown token (or Redis trouble): Django's 401 / 503
        flags = {k: int(v) for k, v in zip(keys, values[1:], strict=True) if v is not None}
        refused = soldout.refusal(flags, quantities, flash_sale_id)
        if refused is not None:
            return refused
        return await confirms.answer(self._confirms, int(values[0]), data)

    def _answer(self, made, secure: bool, view_headers: list) -> tuple[int, list, bytes] | None:
        """``made`` (``(status, body dict)`` or a ShopError) as Django's stack sends it, or None."""
        if made is None:
            return None
        status, payload = (made.status, _error_body(made)) if isinstance(made, ShopError) else made
        body = _json_body(payload)
        return status, http.response_headers(b"application/json", secure, len(body), view_headers), body

    async def _mget(self, keys: list[str]) -> list | None:
        try:
            return await self.client().mget(keys)
        except Exception as exc:  # noqa: BLE001 - down, slow, refusing or pool full: Django answers
            self.warn("Redis unavailable", exc)
            return None


def _error_body(error: ShopError) -> dict:
    return error_body(error.code, error.message, error.detail)


def _body_limit() -> int:
    """Bytes of body the gate reads: MAX_BODY, or less when the API's limit is lower (Django's 413)."""
    return min(MAX_BODY, settings.API_MAX_BODY_BYTES)


def _no_constants(name: str):
    raise ValueError(f"{name} is not JSON")  # NaN / Infinity: DRF's strict parser refuses them
