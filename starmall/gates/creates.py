"""A create's HTTP in front of Django (``POST /api/v1/orders``): read it, hand it to THE create, answer.

``OrderGate`` (``starmall.gates.orders``) hands :func:`answer` a create whose request it checked
as Django would. The order itself is made by ``apps.orders.create.orders_create``, the function
Django's view calls, on one of the worker's create threads (:class:`CreateThreads`); creates
arriving while those are busy go to it together (``postgres.Batches``), so a 秒杀's winners
share one transaction per sale. What stays here is HTTP: the body, the token's customer (one
Redis GET), DRF's own create throttle, and the answer — 201 with ``OrderSerializer``'s body, or a
refusal as Django's exception handler writes it. Anything else goes to Django (docs/GATES.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

from django.conf import settings
from django.db import close_old_connections, connections

from apps.accounts.tokens import token_key
from apps.orders.api.serializers import OrderSerializer
from apps.orders.api.views import OrderCreateThrottle
from apps.orders.create import Created, CreateRequest, orders_create
from apps.orders.exceptions import CustomerInactive
from starmall import cache_client
from starmall.errors import ShopError
from starmall.gates import postgres

logger = logging.getLogger(__name__)

CREATE_PATH = "/api/v1/orders"
CONNECTION_WAIT_SECONDS = 1.0  # no free create thread by then: Django creates the order
BATCH_MAX = 32  # creates handed to orders_create at once, at most
CLOSE_TIMEOUT_SECONDS = 5.0
# SQLite takes one writer at a time (an in-memory test database refuses a second at once instead
# of waiting): the process's creates take turns.
_SQLITE_WRITER = threading.Lock()
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


class CreateThreads:
    """The worker's create threads (``CREATE_GATE_CONNECTIONS``; 0: Django creates every order),
    each with its own Django database connection, shaped as the pool ``postgres.Batches`` sends
    on: a free thread is a free "connection"."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    @property
    def max_size(self) -> int:
        return settings.CREATE_GATE_CONNECTIONS

    async def pool(self) -> CreateThreads | None:
        return self if self.max_size > 0 else None

    def executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.max_size, thread_name_prefix="create-gate")
            return self._executor

    @contextlib.asynccontextmanager
    async def connection(self, timeout: float):
        yield SimpleNamespace(broken=False)

    async def run(self, _slot, items: list[CreateRequest]) -> list:
        """``_in_thread(items)`` on a create thread (``Batches``' ``run``)."""
        return await asyncio.get_running_loop().run_in_executor(self.executor(), _in_thread, items)

    async def warm(self, timeout: float = postgres.WARM_TIMEOUT_SECONDS) -> None:
        """Connect every thread now (the worker's start): a 秒杀's first burst must not wait for
        connecting. The database down or slow: logged; the threads connect on first use."""
        if self.max_size <= 0:
            return
        await self._each_thread(_connect, timeout)

    async def _each_thread(self, work, timeout: float) -> None:
        """Run ``work()`` once on each create thread (a barrier keeps each at one task)."""
        executor = self.executor()
        size = executor._max_workers
        barrier = threading.Barrier(size, timeout=timeout)

        def once() -> None:
            try:
                work()
            finally:
                with contextlib.suppress(threading.BrokenBarrierError):
                    barrier.wait()

        loop = asyncio.get_running_loop()
        done = await asyncio.gather(
            *(loop.run_in_executor(executor, once) for _ in range(size)), return_exceptions=True
        )
        for result in done:
            if isinstance(result, Exception):
                logger.warning("create threads: %s (%s: %s)", work.__name__, type(result).__name__, result)
                break

    async def close(self) -> None:
        """Close every thread's database connection, then the threads (the worker's end; tests)."""
        if self._executor is None:
            return
        await self._each_thread(connections.close_all, CLOSE_TIMEOUT_SECONDS)
        with self._lock:
            executor, self._executor = self._executor, None
        executor.shutdown(wait=False)


def batches(threads: CreateThreads, warn) -> postgres.Batches:
    """The worker's creates, handed to ``orders_create`` together while the threads are busy."""
    return postgres.Batches(threads, threads.run, warn=warn, max_items=BATCH_MAX)


def _in_thread(requests: list[CreateRequest]) -> list:
    """On a create thread: DRF's create throttle for each request, ``orders_create`` for the ones
    it lets through, each answered as ``(status, body)``, a ShopError, or None (Django answers:
    throttled, a replay, an inactive customer, an error)."""
    close_old_connections()  # as at a request's start: an unusable or too old connection goes
    _connect()
    allowed = [i for i, request in enumerate(requests) if _throttle_allows(request.customer_id)]
    answers: list = [None] * len(requests)
    with _SQLITE_WRITER if connections["default"].vendor == "sqlite" else contextlib.nullcontext():
        results = orders_create([requests[i] for i in allowed])
    for i, result in zip(allowed, results, strict=True):
        if isinstance(result, Created) and result.created:
            answers[i] = (201, OrderSerializer(result.order).data)
        elif isinstance(result, ShopError) and not isinstance(result, CustomerInactive):
            answers[i] = result
    return answers


_named = threading.local()


def _connect() -> None:
    """Open this thread's database connection, named ``starmall-create-gate`` on PostgreSQL
    (what ``pg_stat_activity`` shows); again after Django replaced it (too old, broken)."""
    connection = connections["default"]
    connection.ensure_connection()
    if connection.vendor == "postgresql" and getattr(_named, "raw", None) is not connection.connection:
        with connection.cursor() as cursor:
            cursor.execute("SET application_name = 'starmall-create-gate'")
        _named.raw = connection.connection


def _throttle_allows(customer_id: int) -> bool:
    """DRF's ``allow_request`` of the create view's throttle for the customer, on the same cache
    key and history as Django's (a request allowed here is counted as Django counts it)."""
    user = SimpleNamespace(pk=customer_id, is_authenticated=True)
    return OrderCreateThrottle().allow_request(SimpleNamespace(user=user), None)


async def answer(redis, creates: postgres.Batches, token: str, data) -> tuple[int, dict] | ShopError | None:
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
