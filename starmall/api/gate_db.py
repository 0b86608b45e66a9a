"""The ASGI gates' own PostgreSQL connections: a small psycopg_pool per worker process.

Two gates write to PostgreSQL before Django: a 秒杀 winner's create
(``apps.orders.api.create_gate``) and a WeChat payment result's first delivery, queued for the
worker (``apps.payments.api.notify_gate``). Each holds a :class:`Database`: one pool per event
loop, made on first use from ``DATABASES["default"]`` with the libpq options Django passes,
autocommit (every statement the gates send is one query message, its own transaction), all its
connections opened when the worker starts (:meth:`Database.warm`, ``starmall/asgi.py``). On
another database than PostgreSQL, or with its size setting at 0, there is no pool and Django
answers everything the gate would have written.
"""

from __future__ import annotations

import asyncio
import logging

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
