"""A short-lived "sold out" flag per SKU in Redis: the cheap answer for a flash sale's losers.

``order_confirm`` and the ASGI gate answer ``insufficient_stock`` from one Redis read instead of
a PostgreSQL query (docs/PERFORMANCE.md). PostgreSQL stays the only truth: a flag only turns
buyers away, never lets an order through. It is set only from an observed committed stock of 0,
lives at most :data:`FLAG_SECONDS`, and any change that puts units back (cancel, refund, staff
restock) deletes it after its commit, so a wrong "sold out" lasts at most ``FLAG_SECONDS``.
Redis errors are swallowed: without the flag the database answers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from django.core.cache import cache

from apps.catalog.exceptions import InsufficientStock
from starmall import cache_drop

logger = logging.getLogger(__name__)

FLAG_SECONDS = 3  # seconds a flag may outlive the moment stock was seen at 0


def sku_key(sku_id: int) -> str:
    """The flag of a SKU's own stock."""
    return f"soldout:sku:{sku_id}"


def flash_sale_key(sale_id: int) -> str:
    """The flag of a flash sale's (秒杀) own quota (``apps.marketing``); its value is the sale's SKU id."""
    return f"soldout:flash_sale:{sale_id}"


def keys_for(quantities: Iterable[int], flash_sale_id: int | None) -> list[str]:
    """The flags a confirm of ``quantities`` (SKU ids) in flash sale ``flash_sale_id`` reads."""
    return [sku_key(pk) for pk in quantities] + ([flash_sale_key(flash_sale_id)] if flash_sale_id is not None else [])


def refusal(
    flags: Mapping[str, int], quantities: Mapping[int, int], flash_sale_id: int | None
) -> InsufficientStock | None:
    """The sold-out answer for a confirm of ``quantities`` (``{sku_id: units}``), given the
    flags set among :func:`keys_for` (``{key: value}``, :func:`flagged`); None when nothing
    asked for is flagged.

    One rule for ``order_confirm`` and the ASGI gate (``starmall.gates.orders``), with the detail
    the database path gives: the sale's quota first (``flash_sale_id``, ``sku_id``, ``requested``,
    ``available`` 0), then the SKUs in id order (``sku_id``, ``requested``, ``available`` 0).
    """
    # The sale's flag answers only a cart of exactly the sale's SKU (the flag's value); any
    # other cart is the database's to judge (400).
    sale_sku = flags.get(flash_sale_key(flash_sale_id)) if flash_sale_id is not None else None
    if sale_sku is not None and list(quantities) == [sale_sku]:
        return InsufficientStock(
            "秒杀商品已抢完。",
            flash_sale_id=flash_sale_id,
            sku_id=sale_sku,
            requested=quantities[sale_sku],
            available=0,
        )
    for sku_id in sorted(quantities):
        if sku_key(sku_id) in flags:
            return InsufficientStock(sku_id=sku_id, requested=quantities[sku_id], available=0)
    return None


def flagged(keys: Iterable[str]) -> dict[str, int]:
    """The flags set among ``keys``, ``{key: value}`` (one Redis round trip; empty on Redis errors)."""
    keys = list(keys)
    try:
        return cache.get_many(keys)
    except Exception:  # Redis down or hung: ask the database instead
        logger.warning("sold-out flags unavailable", exc_info=True)
        return {}


def mark(key: str, value: int = 1) -> None:
    """Flag ``key`` sold out for FLAG_SECONDS. Call only with stock seen at 0 and committed
    (from ``transaction.on_commit`` when this transaction took the last unit). ``value``: 1 for
    a SKU, the sale's SKU id for a flash sale (:func:`refusal` answers with it)."""
    try:
        cache.set(key, value, timeout=FLAG_SECONDS)
    except Exception:
        logger.warning("could not flag %s sold out", key, exc_info=True)


def clear_now_and_after_commit(keys: list[str]) -> None:
    """Units are being put back in the caller's transaction: drop the flags now and again
    after commit (a loser may re-flag from the not yet committed 0 in between). An early drop
    only sends buyers to the database, never away; a flag that could not be dropped expires
    within FLAG_SECONDS."""
    cache_drop.drop_now_and_after_commit(keys)
