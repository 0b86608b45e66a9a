"""The ASGI gates' own PostgreSQL connections, and the batches both gates send through.

:class:`Database` is one small psycopg_pool per event loop, made on first use from ``DATABASES["default"]``
with the libpq options Django passes, autocommit (every statement one query message, its own
transaction), all its connections opened when the worker starts (:meth:`Database.warm`). On another
database than PostgreSQL, or with its size setting at 0, there is no pool and Django answers everything
a gate would have written. :class:`BatchQueue` sends what arrives while every connection is busy together
on the next free one: the notify gate's first deliveries, and the creates handed to ``orders_create``
(``starmall.gates.threads.OrderThreads``, a pool of threads shaped as one of connections).
"""

from __future__ import annotations

import asyncio
import logging
import weakref

from django.conf import settings
from psycopg.conninfo import make_conninfo
from psycopg_pool import AsyncConnectionPool

CONNECT_TIMEOUT_SECONDS = 2
WARM_TIMEOUT_SECONDS = 3  # the most a worker's start-up waits for its gates' connections

logger = logging.getLogger(__name__)


class Database:
    """A gate's PostgreSQL pool in this worker, one per event loop, made on first use.

    ``name``: the pool's name and the connections' ``application_name`` (``starmall-<name>``,
    what ``pg_stat_activity`` shows); ``size_setting``: the Django setting with the most
    connections the pool opens (0: no pool).
    """

    def __init__(self, name: str, size_setting: str) -> None:
        self.name, self.size_setting = name, size_setting
        self._pool: tuple[asyncio.AbstractEventLoop, AsyncConnectionPool] | None = None

    async def pool(self) -> AsyncConnectionPool | None:
        """The pool of the running event loop, or None (not PostgreSQL, or sized 0)."""
        db = settings.DATABASES["default"]
        size = getattr(settings, self.size_setting)
        if size <= 0 or db["ENGINE"] != "django.db.backends.postgresql":
            return None
        loop = asyncio.get_running_loop()
        if self._pool is None or self._pool[0] is not loop:
            pool = AsyncConnectionPool(
                conninfo(db, application_name=f"starmall-{self.name}"),
                min_size=size,  # all opened at once: a burst must not wait for connecting
                max_size=size,
                kwargs={"autocommit": True},
                open=False,
                name=self.name,
            )
            await pool.open(wait=False)
            self._pool = (loop, pool)
        return self._pool[1]

    async def warm(self, timeout: float = WARM_TIMEOUT_SECONDS) -> None:
        """Make the pool and wait (at most ``timeout`` seconds) until its connections are open
        (the worker's start-up). PostgreSQL down or slow: logged; the pool keeps connecting."""
        pool = await self.pool()
        if pool is None:
            return
        try:
            await pool.wait(timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - psycopg_pool's PoolTimeout and the like
            logger.warning(
                "%s: PostgreSQL connections not ready at start-up (%s); they keep connecting", self.name, exc
            )

    async def close(self) -> None:
        """Close the pool (tests; a worker's pool lives as long as its process)."""
        if self._pool is not None:
            (loop, pool), self._pool = self._pool, None
            if loop is asyncio.get_running_loop():  # one of an ended loop cannot be closed: dropped
                await pool.close()


class BatchQueue:
    """Statements of many requests sent as one: what requests hand to :meth:`submit` while the pool's
    connections are busy waits, and the next free connection runs all of it (up to ``max_items``) in
    ONE statement — the application's own group commit. In a burst a request then waits for at most the
    statement in flight and its own, not for every hand-over of a connection (docs/PERFORMANCE.md).

    ``run(connection, items)`` (async) sends the statement for ``items`` on an autocommit connection and
    returns one result per item, in order (or raises: every item None); ``warn(what, exc)`` reports a
    batch not written (the gate's ``RedisGate.warn``: one warning per interval). At most the pool's size
    of statements run at once, one per connection; one event loop's batches never mix with another's.
    """

    def __init__(self, database: Database, run, *, warn, max_items: int = 100) -> None:
        self.database, self.run, self.warn, self.max_items = database, run, warn, max_items
        # One queue per event loop: tests run each request in a loop of its own.
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pending] = weakref.WeakKeyDictionary()

    async def submit(self, item, wait_seconds: float):
        """``item``'s result, or None: no pool, or no connection took it within ``wait_seconds``
        (PostgreSQL down or saturated: the caller lets Django answer). Once a statement carries
        the item its outcome is waited for, as a lone statement's would be; a statement that
        failed gives every item in it None (one warning)."""
        pool = await self.database.pool()
        if pool is None:
            return None
        loop = asyncio.get_running_loop()
        pending = self._pending()
        entry = _Entry(item, loop.create_future())
        pending.entries.append(entry)
        if pending.running < pool.max_size:
            pending.running += 1
            task = loop.create_task(self._send(pool, pending))
            pending.tasks.add(task)
            task.add_done_callback(pending.tasks.discard)
        # A timer, not wait_for(shield(...)): the answer reaches the request in the turn after the
        # sender sets it, not three turns later (each a turn of a loop busy with a burst).
        timer = loop.call_later(wait_seconds, _expire, pending, entry)
        try:
            return await entry.future
        finally:
            timer.cancel()

    async def drain(self) -> None:
        """Wait for the statements of this loop still running (the worker's shut-down)."""
        pending = self._by_loop.get(asyncio.get_running_loop())
        if pending is not None and pending.tasks:
            await asyncio.gather(*list(pending.tasks), return_exceptions=True)

    def _pending(self) -> _Pending:
        """This event loop's queue (loops in other threads, as in tests, have their own)."""
        loop = asyncio.get_running_loop()
        pending = self._by_loop.get(loop)
        if pending is None:
            pending = self._by_loop[loop] = _Pending()
        return pending

    async def _send(self, pool: AsyncConnectionPool, pending: _Pending) -> None:
        """Hold one connection while items wait, one statement per batch of them. Every item
        taken gets its result or None; on a failure every item waiting gets None at once. A
        connection that broke under a ``run`` which answered anyway (it reports its own
        errors) goes back to the pool, which drops it, and the next batch takes another."""
        done = False  # this sender no longer counted: a submit from now on starts another
        try:
            while not done:
                async with pool.connection(timeout=CONNECT_TIMEOUT_SECONDS) as conn:
                    while True:
                        if not pending.entries:  # no await between this test and the count: no item is left behind
                            pending.running -= 1
                            done = True
                            break
                        batch = pending.entries[: self.max_items]
                        del pending.entries[: len(batch)]
                        for entry in batch:
                            entry.taken = True
                        try:
                            results = await self.run(conn, [entry.item for entry in batch])
                            if len(results) != len(batch):
                                raise RuntimeError(f"{len(results)} results for {len(batch)} items")
                            for entry, result in zip(batch, results, strict=True):
                                if not entry.future.done():
                                    entry.future.set_result(result)
                        finally:
                            for entry in batch:
                                if not entry.future.done():
                                    entry.future.set_result(None)
                        if conn.broken:
                            break
        except Exception as exc:  # noqa: BLE001 - no connection, or the statement failed: Django answers
            self.warn("PostgreSQL unavailable", exc)
            waiting, pending.entries[:] = list(pending.entries), []
            for entry in waiting:
                if not entry.future.done():
                    entry.future.set_result(None)
        finally:
            if not done:
                pending.running -= 1


def _expire(pending: _Pending, entry: _Entry) -> None:
    """An item's wait is over: never sent, it leaves the queue with None (nothing was written for
    it); already in a statement, it waits for that statement's outcome."""
    if not entry.taken and not entry.future.done():
        pending.entries.remove(entry)
        entry.future.set_result(None)


class _Entry:
    __slots__ = ("future", "item", "taken")

    def __init__(self, item, future: asyncio.Future) -> None:
        self.item, self.future, self.taken = item, future, False


class _Pending:
    """One event loop's waiting items, its senders running and their tasks."""

    def __init__(self) -> None:
        self.entries: list[_Entry] = []
        self.running = 0
        self.tasks: set[asyncio.Task] = set()


def conninfo(db: dict, *, application_name: str) -> str:
    """libpq's connection string for Django's ``db`` settings (NAME, USER, PASSWORD, HOST,
    PORT and the SSL/``options`` entries of OPTIONS), with a connect timeout."""
    params = {
        "dbname": db["NAME"],
        "user": db.get("USER") or None,
        "password": db.get("PASSWORD") or None,
        "host": db.get("HOST") or None,
        "port": str(db["PORT"]) if db.get("PORT") else None,
        "connect_timeout": CONNECT_TIMEOUT_SECONDS,
        "application_name": application_name,
    }
    for name in ("sslmode", "sslrootcert", "sslcert", "sslkey", "options"):  # libpq's, as Django passes them
        if name in db.get("OPTIONS", {}):
            params[name] = db["OPTIONS"][name]
    return make_conninfo(**{k: v for k, v in params.items() if v is not None})
