"""The shop's worker and beat report that they are alive, in Redis, for ``/healthz``.

A Celery worker writes its heartbeat every :data:`INTERVAL_SECONDS` from its consumer's own
event loop (:class:`WorkerHeartbeat`, a consumer bootstep registered by ``starmall/celery.py``:
a consumer that stopped consuming stops reporting); the beat that holds the send lock writes
its heartbeat after every tick (``starmall.beat.Scheduler``). Each heartbeat is a cache key
(the shop's Redis, the shop's key prefix) that expires :data:`FRESH_SECONDS` after it was
written, so every web node reads the same answer: "a worker / a sending beat reported within
the last 60 s", for the whole shop, whichever machine it runs on.
"""

from __future__ import annotations

import logging
import time

from celery import bootsteps

logger = logging.getLogger(__name__)

FRESH_SECONDS = 60  # API.md: "ok" while one reported within 60 s
INTERVAL_SECONDS = 15  # a worker reports this often (four chances inside FRESH_SECONDS)
KEYS = {"worker": "heartbeat:worker", "beat": "heartbeat:beat"}


def heartbeat(role: str, who: str) -> None:
    """Record that ``role`` (``"worker"`` or ``"beat"``) process ``who`` (its node name) is alive
    now. A Redis error is logged, never raised: a heartbeat must not stop the worker or beat."""
    from django.core.cache import cache

    try:
        cache.set(KEYS[role], {"who": who, "at": time.time()}, timeout=FRESH_SECONDS)
    except Exception as exc:  # any Redis or client error: the next one tries again
        logger.warning("heartbeat of %s %s not recorded: %s", role, who, exc)


def shop_heartbeats() -> dict[str, str]:
    """``{"worker": ..., "beat": ...}``, each ``"ok"`` (reported within :data:`FRESH_SECONDS`),
    ``"missing"`` (none did) or ``"unknown"`` (Redis did not answer)."""
    from django.core.cache import cache

    try:
        found = cache.get_many(list(KEYS.values()))
    except Exception:  # Redis down: /healthz says so under "redis"
        return {role: "unknown" for role in KEYS}
    now = time.time()
    return {
        role: "ok" if key in found and now - found[key].get("at", 0) <= FRESH_SECONDS else "missing"
        for role, key in KEYS.items()
    }


class WorkerHeartbeat(bootsteps.StartStopStep):
    """Consumer bootstep: :func:`heartbeat` ``("worker", <node name>)`` at start and every
    :data:`INTERVAL_SECONDS` on the consumer's timer (the loop that takes messages)."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def __init__(self, parent, **kwargs):
        super().__init__(parent, **kwargs)
        self.tref = None

    def start(self, consumer):
        heartbeat("worker", consumer.hostname)
        self.tref = consumer.timer.call_repeatedly(INTERVAL_SECONDS, heartbeat, ("worker", consumer.hostname))

    def stop(self, consumer):
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None

    shutdown = stop
