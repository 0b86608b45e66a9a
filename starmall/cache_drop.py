"""Dropping cache entries that a write is about to make stale, without ever failing the write.

A cached value derived from rows (a sold-out flag, the freight terms) is dropped twice when the
rows change: at once, so the writing transaction's own reads see its writes, and again after
commit, because a reader may have cached the old rows in between. Redis errors are logged; the
entry then lives out its own short timeout.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from functools import partial

from django.core.cache import cache
from django.db import transaction

logger = logging.getLogger(__name__)


def drop(keys: Iterable[str]) -> None:
    """Delete ``keys`` from the cache now (errors logged, never raised)."""
    keys = list(keys)
    try:
        cache.delete_many(keys)
    except Exception:  # noqa: BLE001 - the entry expires by itself
        logger.warning("could not drop cache keys %s", keys, exc_info=True)


def drop_now_and_after_commit(keys: Iterable[str]) -> None:
    """Delete ``keys`` now and again after the caller's transaction commits (at once without one)."""
    keys = list(keys)
    drop(keys)
    transaction.on_commit(partial(drop, keys))
