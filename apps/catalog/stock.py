"""Where stock moves. Every change is a conditional UPDATE whose row count is checked.

The stock functions join the caller's transaction (order create / cancel) or open one
(``@transaction.atomic(savepoint=False)``): a failed line raises, and the rollback restores
every line taken before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from django.db import connection, transaction
from django.db.models import F
from django.db.models.functions import Greatest

from apps.catalog import soldout
from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Product, Sku


def sku_take_sql() -> str:
    """The conditional UPDATE taking units from one SKU on sale, ``RETURNING stock``; its
    parameters are ``(units, sku_id, units)``. Only the SKU's own row is locked and re-checked:
    PostgreSQL re-evaluates ``stock >= n`` on the newest row version after waiting for the lock
    (a join written as ``id IN (SELECT ...)`` would re-check a stale stock: oversold, test_races
    caught it); the product's flag is read from the statement's snapshot."""
    sku, product = Sku._meta.db_table, Product._meta.db_table
    return (
        f"UPDATE {sku} SET stock = stock - %s WHERE id = %s AND is_active AND stock >= %s AND EXISTS ("
        f"SELECT 1 FROM {product} p WHERE p.id = {sku}.product_id AND p.is_active) RETURNING stock"
    )


@transaction.atomic(savepoint=False)
def sku_stock_decrement(*, quantities: Mapping[int, int]) -> None:
    """Take ``quantities`` ({sku_id: units > 0}) from stock, in the caller's transaction.

    SKUs are updated in ascending id order so that orders sharing SKUs cannot deadlock (step 7
    of ``starmall/locking.py``, after everything but product sales). One conditional UPDATE per
    SKU (:func:`sku_take_sql`); 0 rows (not enough stock, or SKU / product off sale) raises
    InsufficientStock with ``sku_id``. Call it as late as possible in the transaction: the rows
    stay locked until commit. A SKU left at 0 is flagged sold out after commit
    (:mod:`apps.catalog.soldout`).
    """
    for sku_id in sorted(quantities):
        units = quantities[sku_id]
        if units <= 0:
            raise ValueError(f"quantity for SKU {sku_id} must be positive, got {units}")
        with connection.cursor() as cursor:
            cursor.execute(sku_take_sql(), [units, sku_id, units])
            row = cursor.fetchone()
        if row is None:
            _refuse(sku_id, units)
        if row[0] == 0:
            transaction.on_commit(partial(soldout.mark, soldout.sku_key(sku_id)))


def _refuse(sku_id: int, units: int) -> None:
    """Raise InsufficientStock for a 0-row decrement: off sale, or not enough units (a stock
    seen at 0 is flagged sold out at once: it is committed state, read after the UPDATE)."""
    sku = Sku.objects.filter(pk=sku_id).values("stock", "is_active", "product__is_active").first()
    if sku is None or not sku["is_active"] or not sku["product__is_active"]:
        raise InsufficientStock("该商品已下架。", sku_id=sku_id)
    if sku["stock"] == 0:
        soldout.mark(soldout.sku_key(sku_id))
    raise InsufficientStock(sku_id=sku_id, requested=units)


@transaction.atomic(savepoint=False)
def sku_stock_restore(*, quantities: Mapping[int, int]) -> None:
    """Put ``quantities`` ({sku_id: units}) back; the caller guarantees it runs once per order.
    In id order, the last of what an order gives back (step 7 of ``starmall/locking.py``).

    (The caller's conditional order transition, e.g. ``unpaid -> cancelled``, is the guard.)
    Sold-out flags of these SKUs are dropped after commit.
    """
    for sku_id in sorted(quantities):
        Sku.objects.filter(pk=sku_id).update(stock=F("stock") + quantities[sku_id])
    soldout.clear_now_and_after_commit([soldout.sku_key(pk) for pk in sorted(quantities)])


@transaction.atomic(savepoint=False)
def product_sales_add(*, quantities: Mapping[int, int]) -> None:
    """Count paid units ({product_id: units}) into ``Product.sales``, in id order: the last
    rows a paying transaction locks (step 8 of ``starmall/locking.py``), since every paying
    order of the product shares them."""
    for product_id in sorted(quantities):
        Product.objects.filter(pk=product_id).update(sales=F("sales") + quantities[product_id])


@transaction.atomic(savepoint=False)
def product_sales_remove(*, quantities: Mapping[int, int]) -> None:
    """Take the units of an order that stopped being live (fully refunded) out of ``sales``:
    ``sales`` counts live orders only. ``SET sales = GREATEST(sales - n, 0)``: relative, never
    below zero; the caller's order transition guarantees it runs once per order. Last, in id
    order (step 8 of ``starmall/locking.py``), after the customer's balance and the SKUs."""
    for product_id in sorted(quantities):
        Product.objects.filter(pk=product_id).update(sales=Greatest(F("sales") - quantities[product_id], 0))


def sku_stock_adjust(*, sku_id: int, delta: int) -> int:
    """Staff restock (+) or write-off (-) of ``delta`` units; returns the new stock.

    A relative F() update, never "stock = <value read earlier>", so it cannot overwrite units
    taken by orders meanwhile. A write-off below zero raises InsufficientStock.
    """
    qs = Sku.objects.filter(pk=sku_id)
    if delta < 0:
        qs = qs.filter(stock__gte=-delta)
    if qs.update(stock=F("stock") + delta) != 1:
        raise InsufficientStock("库存不足，不能减去比现有库存更多的数量。", sku_id=sku_id)
    if delta > 0:
        soldout.clear_now_and_after_commit([soldout.sku_key(sku_id)])
    return Sku.objects.values_list("stock", flat=True).get(pk=sku_id)
