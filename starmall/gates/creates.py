"""A create's HTTP in front of Django (``POST /api/v1/orders``): read it, hand it to THE create, answer.

``OrderGate`` (``starmall.gates.orders``) hands :func:`answer` a create whose request it checked as
Django would. The order is made by ``apps.orders.create.orders_create``, the function Django's view
calls, on one of the worker's order threads (``starmall.gates.threads``); creates arriving while those
are busy go to it together (``postgres.BatchQueue``), so a 秒杀's winners share one transaction per
sale. What stays here is HTTP: the body, the token's customer (one Redis MGET with the draft), DRF's
own create throttle, and the answer — 201 with ``OrderSerializer``'s body, or a refusal as Django's
exception handler writes it (a draft flagged sold out: in the event loop). Else Django's (docs/GATES.md).
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

from django.core.cache import cache

from apps.accounts.tokens import token_key
from apps.catalog.exceptions import InsufficientStock
from apps.orders import drafts
from apps.orders.api.serializers import OrderSerializer
from apps.orders.api.views import OrderCreateThrottle
from apps.orders.create import Created, CreateRequest, draft_of, orders_create, sold_out, sold_out_keys
from apps.orders.exceptions import CustomerInactive
from starmall import cache_client
from starmall.errors import ShopError
from starmall.gates import postgres, threads
from starmall.gates.threads import OrderThreads

logger = logging.getLogger(__name__)

CREATE_PATH = "/api/v1/orders"
CONNECTION_WAIT_SECONDS = 1.0  # no free order thread by then: Django creates the order
BATCH_MAX = 32  # creates handed to orders_create at once, at most
_MAX_KEY = 64  # CreateInSerializer.order_key
_MAX_REMARK = 200  # CreateInSerializer.remark


def create_request(data) -> tuple[str, str] | None:
    """``(order_key, remark)`` for a parsed create body that ``CreateInSerializer`` keeps exactly
    as it is (strings, no surrounding spaces on the key, a remark of at most 200 characters before
    it is trimmed: ``starmall.api.fields.CharField``); None for anything else, which Django judges."""
    if not isinstance(data, dict) or "order_key" not in data or not data.keys() <= {"order_key", "remark"}:
        return None
    key, remark = data["order_key"], data.get("remark", "")
    if type(key) is not str or not 1 <= len(key) <= _MAX_KEY or not key.isascii() or key != key.strip():
        return None
    if not key.isprintable() or type(remark) is not str or "\x00" in remark:
        return None
    try:
        remark.encode("utf-8")  # a lone surrogate: DRF's validator refuses it
    except UnicodeEncodeError:
        return None
    return (key, remark.strip()) if len(remark) <= _MAX_REMARK else None  # counted before trimming, as DRF


def batches(pool: OrderThreads, warn) -> postgres.BatchQueue:
    """The worker's creates, handed to ``orders_create`` together while the threads are busy."""
    return postgres.BatchQueue(pool, pool.runner(_in_thread), warn=warn, max_items=BATCH_MAX)


def _in_thread(requests: list[CreateRequest]) -> list:
    """On a create thread: DRF's create throttle for each request, ``orders_create`` for the ones
    it lets through, each answered as ``(status, body)``, a ShopError, or None (Django answers:
    throttled, a replay, an inactive customer, an error)."""
    threads.connect()
    allowed = _throttle_allowed([request.customer_id for request in requests])
    answers: list = [None] * len(requests)
    with threads.one_writer():
        results = orders_create([requests[i] for i in allowed])
    for i, result in zip(allowed, results, strict=True):
        if isinstance(result, Created) and result.created:
            answers[i] = (201, OrderSerializer(result.order).data)
        elif isinstance(result, ShopError) and not isinstance(result, CustomerInactive):
            answers[i] = result
    return answers


def _throttle_allowed(customer_ids: list[int]) -> list[int]:
    """The indexes of ``customer_ids`` DRF's create throttle lets through (:func:`_throttle_run`),
    its histories read in one cache round trip and written back in another."""
    throttles = _throttles(customer_ids)
    if throttles is None:
        return list(range(len(customer_ids)))
    allowed, histories = _throttle_run(throttles, cache.get_many(_throttle_keys(throttles)))
    if histories.written:
        cache.set_many(histories.written, timeout=histories.timeout)
    return allowed


async def _throttle_allows(redis, customer_id: int) -> bool:
    """:func:`_throttle_allowed` for one customer in the event loop: the same keys and values
    (encoded by the cache's client, written with django-redis's ``PX``), on ``redis``."""
    throttles = _throttles([customer_id])
    if throttles is None:
        return True
    keys = _throttle_keys(throttles)
    client = cache_client.default().client
    stored = await redis.mget([cache_client.make_key(key) for key in keys])
    read = {key: client.decode(value) for key, value in zip(keys, stored, strict=True) if value is not None}
    allowed, histories = _throttle_run(throttles, read)
    if histories.written:
        expiry = None if histories.timeout is None else int(histories.timeout * 1000)
        async with redis.pipeline(transaction=False) as pipe:
            for key, history in histories.written.items():
                pipe.set(cache_client.make_key(key), client.encode(history), px=expiry)
            await pipe.execute()
    return bool(allowed)


def _throttles(customer_ids: list[int]) -> list[tuple[OrderCreateThrottle, SimpleNamespace]] | None:
    """The create view's throttle and a request of each of ``customer_ids``, as DRF checks
    them; None when the throttle has no rate (every create allowed)."""
    throttles = [
        (OrderCreateThrottle(), SimpleNamespace(user=SimpleNamespace(pk=pk, is_authenticated=True)))
        for pk in customer_ids
    ]
    return None if throttles and throttles[0][0].rate is None else throttles


def _throttle_keys(throttles: list[tuple[OrderCreateThrottle, SimpleNamespace]]) -> list[str]:
    """The cache keys of their histories (DRF's own ``get_cache_key``)."""
    return [throttle.get_cache_key(request, None) for throttle, request in throttles]


def _throttle_run(
    throttles: list[tuple[OrderCreateThrottle, SimpleNamespace]], read: dict
) -> tuple[list[int], _Histories]:
    """DRF's ``allow_request`` of each of ``throttles`` in order, on the histories ``read``
    (``{key: history}``): the indexes allowed, and what DRF wrote (a create allowed here is
    counted as Django counts it)."""
    histories = _Histories(read)
    allowed = []
    for i, (throttle, request) in enumerate(throttles):
        throttle.cache = histories
        if throttle.allow_request(request, None):
            allowed.append(i)
    return allowed, histories


class _Histories:
    """A throttle cache for one batch over the histories read at once (``{key: history}``);
    ``written`` holds what DRF set, with its ``timeout`` (a customer twice in the batch sees the
    first request's write)."""

    def __init__(self, read: dict) -> None:
        self._read = read
        self.written: dict[str, list] = {}
        self.timeout = None

    def get(self, key: str, default=None):
        return self.written.get(key, self._read.get(key, default))

    def set(self, key: str, value, timeout=None) -> None:
        self.written[key], self.timeout = value, timeout


async def answer(redis, creates: postgres.BatchQueue, token: str, data) -> tuple[int, dict] | ShopError | None:
    """``(201, body)`` of the order made, the refusal (a ShopError, rendered as Django's handler
    renders it), or None: Django answers. ``redis``: the gate's redis.asyncio client;
    ``creates``: the worker's :func:`batches`; ``token``: the bearer token; ``data``: the parsed
    JSON body. A draft whose SKU is flagged sold out is refused here, in the event loop, by
    ``orders_create``'s own first rule (``apps.orders.create.sold_out``) after DRF's throttle
    counted it; any other goes to ``orders_create``. Redis errors propagate (the gate passes)."""
    parsed = create_request(data)
    if parsed is None:
        return None
    order_key, remark = parsed
    customer, stored = await redis.mget(
        [cache_client.make_key(token_key(token)), cache_client.make_key(drafts.draft_key(order_key))]
    )
    if customer is None:
        return None  # unknown token: Django's 401
    request = CreateRequest(int(customer), order_key, remark)
    # In the event loop: buyers who confirmed just before the last unit went wait for no order thread.
    refused = await _sold_out(redis, request, stored)
    if refused is not None:
        return refused if await _throttle_allows(redis, request.customer_id) else None  # else Django's 429
    return await creates.submit(request, CONNECTION_WAIT_SECONDS)


async def _sold_out(redis, request: CreateRequest, stored: bytes | None) -> InsufficientStock | None:
    """``orders_create``'s sold-out refusal of ``request``'s draft (``stored``: as Redis holds
    it), from one MGET of its flags; None when it has none, or no draft (a replay, another's)."""
    draft = draft_of(request, None if stored is None else cache_client.default().client.decode(stored))
    keys = sold_out_keys(draft) if draft is not None else []
    if not keys:
        return None
    values = await redis.mget([cache_client.make_key(key) for key in keys])
    return sold_out(draft, {key: int(value) for key, value in zip(keys, values, strict=True) if value is not None})
