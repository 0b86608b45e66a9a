"""A short-lived "sold out" flag per SKU in Redis: the cheap answer for a flash sale's losers.

When a SKU sells out, thousands of buyers keep pressing "buy"; each would cost a PostgreSQL
query just to learn that stock is 0. The flag lets ``order_confirm`` answer
``insufficient_stock`` from one Redis read instead (issue 8). PostgreSQL stays the only truth
for winners: the flag never lets an order through, it only turns buyers away, and only while:

- it was set from an OBSERVED committed stock of 0 (after the commit of the order that took
  the last unit, or a read/0-row UPDATE that saw 0 in the database);
- it lives at most :data:`FLAG_SECONDS`; and
- any change that puts units back (cancel, refund, staff restock) deletes it after its commit.

So a wrong "sold out" (e.g. a flag set by a loser racing a restock's delete) lasts at most
``FLAG_SECONDS``. Redis errors are swallowed: without the flag the database answers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.core.cache import cache

logger = logging.getLogger(__name__)

FLAG_SECONDS = 3  # seconds a flag may outlive the moment stock was seen at 0


def _key(sku_id: int) -> str:
    return f"sku:soldout:{sku_id}"


def sold_out(sku_ids: Iterable[int]) -> set[int]:
    """The SKUs among ``sku_ids`` flagged sold out (one Redis round trip; empty on Redis errors)."""
    keys = {_key(sku_id): sku_id for sku_id in sku_ids}
    try:
        found = cache.get_many(list(keys))
    except Exception:  # Redis down or hung: ask the database instead
        logger.warning("sold-out flags unavailable", exc_info=True)
        return set()
    return {keys[key] for key in found}


def mark(sku_id: int) -> None:
    """Flag ``sku_id`` sold out for FLAG_SECONDS. Call only with stock seen at 0 and committed
    (from ``transaction.on_commit`` when this transaction took the last unit)."""
    try:
        cache.set(_key(sku_id), 1, timeout=FLAG_SECONDS)
    except Exception:
        logger.warning("could not flag SKU %s sold out", sku_id, exc_info=True)


def clear(sku_ids: Iterable[int]) -> None:
    """Units came back (call after commit): drop the flags so buyers reach the database."""
    try:
        cache.delete_many([_key(sku_id) for sku_id in sku_ids])
    except Exception:  # the flag expires by itself within FLAG_SECONDS
        logger.warning("could not clear sold-out flags of %s", list(sku_ids), exc_info=True)
