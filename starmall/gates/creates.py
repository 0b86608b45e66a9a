"""A create's HTTP in front of Django (``POST /api/v1/orders``): read it, hand it to THE create, answer.

``OrderGate`` (``starmall.gates.orders``) hands :func:`answer` a create whose request it checked
as Django would. The order itself is made by ``apps.orders.create.orders_create``, the function
Django's view calls, on one of the worker's order threads (``starmall.gates.threads``); creates
arriving while those are busy go to it together (``postgres.BatchQueue``), so a 秒杀's winners
share one transaction per sale. What stays here is HTTP: the body, the token's customer (one
Redis GET), DRF's own create throttle, and the answer — 201 with ``OrderSerializer``'s body, or a
refusal as Django's exception handler writes it. Anything else goes to Django (docs/GATES.md).
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

from django.core.cache import cache

from apps.accounts.tokens import token_key
from apps.orders.api.serializers import OrderSerializer
from apps.orders.api.views import OrderCreateThrottle
from apps.orders.create import Created, CreateRequest, orders_create
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
    """The indexes of ``customer_ids`` DRF's ``allow_request`` of the create view's throttle lets
    through, in order, on the same cache keys and histories as Django's (a create allowed here is
    counted as Django counts it): DRF's own code, its cache reads in one round trip and its writes
    in another (:class:`_Histories`)."""
    throttles = [OrderCreateThrottle() for _ in customer_ids]
    requests = [SimpleNamespace(user=SimpleNamespace(pk=pk, is_authenticated=True)) for pk in customer_ids]
    if throttles and throttles[0].rate is None:
        return list(range(len(customer_ids)))
    histories = _Histories([t.get_cache_key(r, None) for t, r in zip(throttles, requests, strict=True)])
    allowed = []
    for i, (throttle, request) in enumerate(zip(throttles, requests, strict=True)):
        throttle.cache = histories
        if throttle.allow_request(request, None):
            allowed.append(i)
    histories.save()
    return allowed


class _Histories:
    """A throttle cache for one batch: the histories read with one ``get_many``, written back with
    one ``set_many`` (a customer twice in the batch sees the first request's write)."""

    def __init__(self, keys: list[str]) -> None:
        self._read = cache.get_many(keys)
        self._written: dict[str, list] = {}
        self._timeout = None

    def get(self, key: str, default=None):
        return self._written.get(key, self._read.get(key, default))

    def set(self, key: str, value, timeout=None) -> None:
        self._written[key], self._timeout = value, timeout

    def save(self) -> None:
        if self._written:
            cache.set_many(self._written, timeout=self._timeout)


async def answer(redis, creates: postgres.BatchQueue, token: str, data) -> tuple[int, dict] | ShopError | None:
    """``(201, body)`` of the order made, the refusal (a ShopError, rendered as Django's handler
    renders it), or None: Django answers. ``redis``: the gate's redis.asyncio client;
    ``creates``: the worker's :func:`batches`; ``token``: the bearer token; ``data``: the parsed
    JSON body. Redis errors propagate (the gate passes)."""
    parsed = create_request(data)
    if parsed is None:
        return None
    customer = await redis.get(cache_client.make_key(token_key(token)))
    if customer is None:
        return None  # unknown token: Django's 401
    order_key, remark = parsed
    return await creates.submit(CreateRequest(int(customer), order_key, remark), CONNECTION_WAIT_SECONDS)
