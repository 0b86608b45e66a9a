"""Where stock moves. Every change is a conditional UPDATE whose row count is checked.

The stock functions join the caller's transaction (order create / cancel) or open one
(``@transaction.atomic(savepoint=False)``): a failed line raises, and the rollback restores
every line taken before it.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Greatest

from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Product, Sku


@transaction.atomic(savepoint=False)
def sku_stock_decrement(*, quantities: Mapping[int, int]) -> None:
    """Take ``quantities`` ({sku_id: units > 0}) from stock, in the caller's transaction.

    SKUs are updated in ascending id order so that two orders sharing SKUs take the row locks
    in the same order and cannot deadlock (django-oscar allocates stock the same way).
    ``UPDATE ... SET stock = stock - n WHERE id = ? AND stock >= n``: 0 rows means not
    enough stock (or a SKU / product taken off sale) and raises InsufficientStock with ``sku_id``.
    """
    off_sale = Sku.objects.filter(Q(is_active=False) | Q(product__is_active=False), pk__in=list(quantities))
    for sku_id in off_sale.values_list("pk", flat=True)[:1]:
        raise InsufficientStock("该商品已下架。", sku_id=sku_id)
    for sku_id in sorted(quantities):
        units = quantities[sku_id]
        if units <= 0:
            raise ValueError(f"quantity for SKU {sku_id} must be positive, got {units}")
        # Only the SKU's own columns in the WHERE: a join would make Django write
        # "WHERE id IN (SELECT ...)", and PostgreSQL re-checks only that after waiting for the
        # row lock, with the stale stock of the subquery (oversold; test_races caught it).
        updated = Sku.objects.filter(pk=sku_id, is_active=True, stock__gte=units).update(
            stock=F("stock") - units
        )
        if updated != 1:
            raise InsufficientStock(sku_id=sku_id, requested=units)


@transaction.atomic(savepoint=False)
def sku_stock_restore(*, quantities: Mapping[int, int]) -> None:
    """Put ``quantities`` ({sku_id: units}) back; the caller guarantees it runs once per order.

    (The caller's conditional order transition, e.g. ``unpaid -> cancelled``, is the guard.)
    """
    for sku_id in sorted(quantities):
        Sku.objects.filter(pk=sku_id).update(stock=F("stock") + quantities[sku_id])


@transaction.atomic(savepoint=False)
def product_sales_add(*, quantities: Mapping[int, int]) -> None:
    """Count paid units ({product_id: units}) into ``Product.sales``."""
    for product_id in sorted(quantities):
        Product.objects.filter(pk=product_id).update(sales=F("sales") + quantities[product_id])


@transaction.atomic(savepoint=False)
def product_sales_remove(*, quantities: Mapping[int, int]) -> None:
    """Take the units of an order that stopped being live (fully refunded) out of ``sales``:
    ``sales`` counts live orders only. ``SET sales = GREATEST(sales - n, 0)``: relative, never
    below zero; the caller's order transition guarantees it runs once per order."""
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
    return Sku.objects.values_list("stock", flat=True).get(pk=sku_id)
