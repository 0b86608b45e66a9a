"""Which of the shop's processes this machine runs (``STARMALL_ROLES``), and the lock that makes
the one-time start-up work run once for the whole shop.

``STARMALL_ROLES`` is a comma-separated subset of :data:`ROLES` (default: all of them). A second machine
behind the load balancer runs ``STARMALL_ROLES=web,worker make run`` against the same ``DATABASE_URL``
and ``REDIS_URL``; beat may run on several machines (one sends at a time: ``starmall/beat.py``);
``sandbox`` is the demo's WeChat sandbox. :func:`startup_lock` serializes ``manage.py runshop``'s
preparation (migrate, demo data, staff logins, slots, the almanac window) between machines that start
at the same moment: the second waits, then finds every step done (each is idempotent) and goes on.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

logger = logging.getLogger(__name__)

ROLES = ("web", "worker", "beat", "sandbox")
DEFAULT_ROLES = ",".join(ROLES)
# pg_advisory_lock's key: any constant the shop uses for nothing else ("starmall" in ASCII, 8 bytes).
STARTUP_LOCK_KEY = int.from_bytes(b"starmall", "big") & 0x7FFF_FFFF_FFFF_FFFF


def roles_from_environ(environ: Mapping[str, str]) -> frozenset[str]:
    """The roles ``STARMALL_ROLES`` names (default every role in :data:`ROLES`).

    Raises ValueError naming an unknown role, or when the list is empty.
    """
    raw = environ.get("STARMALL_ROLES", DEFAULT_ROLES)
    roles = {part.strip().lower() for part in raw.split(",") if part.strip()}
    unknown = sorted(roles - set(ROLES))
    if unknown:
        raise ValueError(f"STARMALL_ROLES: unknown role {', '.join(unknown)} (known: {DEFAULT_ROLES})")
    if not roles:
        raise ValueError(f"STARMALL_ROLES names no role (known: {DEFAULT_ROLES})")
    return frozenset(roles)


@contextlib.contextmanager
def startup_lock(alias: str = "default", *, poll_seconds: float = 1.0) -> Iterator[float]:
    """Hold the shop-wide start-up lock for the block; yields the seconds spent waiting for it.

    PostgreSQL: ``pg_advisory_lock`` on a separate session (released by ``pg_advisory_unlock``
    and, if this process dies, by PostgreSQL when the session ends), polled with
    ``pg_try_advisory_lock`` every ``poll_seconds`` so the wait is logged. SQLite: ``flock`` on
    ``<database file>.startup.lock``. Other engines: no lock.
    """
    from django.db import connections

    vendor = connections[alias].vendor
    started = time.monotonic()
    if vendor == "postgresql":
        connection = connections.create_connection(alias)
        try:
            with connection.cursor() as cursor:
                while True:
                    cursor.execute("SELECT pg_try_advisory_lock(%s)", [STARTUP_LOCK_KEY])
                    if cursor.fetchone()[0]:
                        break
                    logger.info("start-up: another machine is preparing the shop; waiting for it")
                    time.sleep(poll_seconds)
            try:
                yield time.monotonic() - started
            finally:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [STARTUP_LOCK_KEY])
        finally:
            connection.close()
    elif vendor == "sqlite" and not connections[alias].is_in_memory_db():
        path = Path(f"{connections[alias].settings_dict['NAME']}.startup.lock")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield time.monotonic() - started
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
    else:
        yield 0.0
