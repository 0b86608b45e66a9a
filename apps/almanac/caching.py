"""Redis cache of the almanac API answers, invalidated by a generation token.

Keys are ``almanac:<generation>:<what>``. The loader calls :func:`bump` once it has committed
its chunks: a new random generation makes every older entry unreachable at once (they expire by
TTL), without scanning keys, and an answer computed from old data while a load runs can only
be stored under the old generation. A lost generation key (Redis restart, eviction) just
starts a new one. Redis trouble never fails a read: the answer is computed from the database.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import Any

from django.core.cache import cache

logger = logging.getLogger(__name__)

GENERATION_KEY = "almanac:generation"
TTL_SECONDS = 24 * 3600  # answers change only when the almanac is reloaded (then bump())


def _generation() -> str:
    gen = cache.get(GENERATION_KEY)
    if gen is None:
        cache.add(GENERATION_KEY, secrets.token_hex(4), timeout=None)
        gen = cache.get(GENERATION_KEY)
    return gen


def bump() -> None:
    """Start a new generation: every cached almanac answer is stale from now on."""
    try:
        cache.set(GENERATION_KEY, secrets.token_hex(4), timeout=None)
    except Exception as exc:  # noqa: BLE001 - a load must not fail because Redis is down
        logger.warning(
            "almanac: could not bump the cache generation (%s); cached answers expire within %d s", exc, TTL_SECONDS
        )


def get_or_compute(what: str, compute: Callable[[], Any]) -> Any:
    """The cached value for ``what`` (e.g. ``day:2024-02-09``), computing and storing it if absent.

    Exceptions of ``compute`` (a 404 for an unloaded date) propagate and are not cached.
    """
    try:
        key = f"almanac:{_generation()}:{what}"
        value = cache.get(key)
    except Exception as exc:  # noqa: BLE001
        logger.warning("almanac: cache unavailable (%s), reading the database", exc)
        return compute()
    if value is not None:
        return value
    value = compute()
    try:
        cache.set(key, value, timeout=TTL_SECONDS)
    except Exception as exc:  # noqa: BLE001
        logger.warning("almanac: could not cache %s (%s)", what, exc)
    return value
