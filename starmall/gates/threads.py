"""The worker's order threads: where a gate calls the order services (confirm, create) itself.

A gate reads a request in the event loop; the service it hands it to (``order_confirm``,
``orders_create``, the functions Django's views call) is sync Django code, so it runs on one of
``CREATE_GATE_CONNECTIONS`` threads per worker, each with its own database connection (opened
at the worker's start, named ``starmall-create-gate`` in ``pg_stat_activity``). Shaped as the
pool ``postgres.BatchQueue`` sends on: a free thread is a free "connection".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

from django.conf import settings
from django.db import connections

from starmall.gates import postgres

logger = logging.getLogger(__name__)

CLOSE_TIMEOUT_SECONDS = 5.0
# SQLite takes one writer at a time (an in-memory test database refuses a second at once instead
# of waiting): the process's service calls take turns there.
_SQLITE_WRITER = threading.Lock()


class OrderThreads:
    """The worker's order threads (``CREATE_GATE_CONNECTIONS``; 0: none, Django answers all)."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    @property
    def max_size(self) -> int:
        return settings.CREATE_GATE_CONNECTIONS

    async def pool(self) -> OrderThreads | None:
        return self if self.max_size > 0 else None

    def executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.max_size, thread_name_prefix="create-gate")
            return self._executor

    @contextlib.asynccontextmanager
    async def connection(self, timeout: float):
        yield SimpleNamespace(broken=False)

    def runner(self, work):
        """``BatchQueue``' ``run`` calling ``work(items)`` on one of the threads."""

        async def run(_slot, items: list) -> list:
            return await asyncio.get_running_loop().run_in_executor(self.executor(), work, items)

        return run

    async def warm(self, timeout: float = postgres.WARM_TIMEOUT_SECONDS) -> None:
        """Connect every thread now (the worker's start): a 秒杀's first burst must not wait for
        connecting. The database down or slow: logged; the threads connect on first use."""
        if self.max_size <= 0:
            return
        await self._each_thread(connect, timeout)

    async def _each_thread(self, work, timeout: float) -> None:
        """Run ``work()`` once on each order thread (a barrier keeps each at one task)."""
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
                logger.warning("order threads: %s (%s: %s)", work.__name__, type(result).__name__, result)
                break

    async def close(self) -> None:
        """Close every thread's database connection, then the threads (the worker's end; tests)."""
        if self._executor is None:
            return
        await self._each_thread(connections.close_all, CLOSE_TIMEOUT_SECONDS)
        with self._lock:
            executor, self._executor = self._executor, None
        executor.shutdown(wait=False)


_named = threading.local()


def connect() -> None:
    """As at a request's start a connection that errored (and is unusable) or grew too old goes —
    checked only then, not with a ``SELECT 1`` before every call as ``close_old_connections()``
    would arrange — then open this thread's database connection, named ``starmall-create-gate``
    on PostgreSQL (what ``pg_stat_activity`` shows); again after it was replaced."""
    connection = connections["default"]
    if connection.connection is not None and (
        connection.errors_occurred or (connection.close_at is not None and time.monotonic() >= connection.close_at)
    ):
        connection.close_if_unusable_or_obsolete()
    connection.ensure_connection()
    if connection.vendor == "postgresql" and getattr(_named, "raw", None) is not connection.connection:
        with connection.cursor() as cursor:
            cursor.execute("SET application_name = 'starmall-create-gate'")
        _named.raw = connection.connection


def one_writer():
    """On SQLite a lock the process's service calls take turns on; elsewhere nothing."""
    return _SQLITE_WRITER if connections["default"].vendor == "sqlite" else contextlib.nullcontext()
