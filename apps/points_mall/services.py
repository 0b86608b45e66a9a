"""Points-mall exchanges (API.md "Members": POST /api/v1/points-mall/{id}/exchange).

:func:`item_exchange` is ONE transaction, rows in the lock order of ``starmall/locking.py`` (its steps
numbered at the code): for goods a paid 0-fen order (a one-line draft at price 0, never priced at
confirm: no member, level, coupon or points discount); the customer's row locked, the per-customer
limit counted under it, the points taken (``wallet.points_exchange_debit``, conditional); the item's
stock - 1 (conditional); goods: the SKU's stock, then the order paid (method ``points``) and shipped
by staff like any other; a coupon: ``coupons.coupon_grant``. Any refusal rolls everything back, so
racing exchanges never overdraw points, stock or the limit (tests/concurrency/test_points_mall_races.py).
"""

from __future__ import annotations

import datetime as dt
import secrets

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from apps.accounts import wallet
from apps.accounts.models import Address, Customer
from apps.catalog import stock
from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Kind
from apps.marketing import coupons
from apps.orders import drafts, order_rows
from apps.orders import services as order_services
from apps.orders.create import order_no_new
from apps.orders.exceptions import CustomerInactive
from apps.orders.models import PayMethod
from apps.points_mall.models import Exchange, Item
from starmall.errors import InvalidInput, LimitExceeded, NotFound

ACTOR = "points_mall"


def exchange_no_new(now: dt.datetime) -> str:
    """``PM`` + ``yyyyMMddHHmmss`` (Shanghai) + 8 random digits: 24 characters."""
    return "PM" + timezone.localtime(now).strftime("%Y%m%d%H%M%S") + f"{secrets.randbelow(10**8):08d}"


def _address(customer_id: int, address_id: int | None) -> dict:
    """The order's address snapshot: ``address_id`` (the customer's) or their default."""
    addresses = Address.objects.filter(customer_id=customer_id)
    address = addresses.filter(pk=address_id).first() if address_id else addresses.filter(is_default=True).first()
    if address is None:
        raise InvalidInput("请选择收货地址。", address_id=["请先添加收货地址"])
    return {"id": address.pk, **address.snapshot()}


def _draft(item: Item, customer_id: int, address: dict, now: dt.datetime) -> drafts.OrderDraft:
    """A one-line draft of the item's SKU at 0 fen: the order the exchange makes."""
    sku = item.sku
    line = drafts.DraftLine.priced(
        sku_id=sku.pk, product_id=sku.product_id, name=sku.product.name, specs=sku.specs, price_fen=0, quantity=1
    )
    return drafts.OrderDraft(
        order_key=f"points-mall:{secrets.token_hex(16)}",
        customer_id=customer_id,
        kind=Kind.GOODS,
        expires_at=timezone.localtime(now).isoformat(),
        lines=[line],
        goods_fen=0,
        freight_fen=0,
        coupon_id=None,
        coupon_fen=0,
        points_used=0,
        points_fen=0,
        pay_fen=0,
        slot=None,
        address=address,
        flash_sale_id=None,
        cart_items=None,
        usable_coupons=[],
    )


def _limit_check(item: Item, customer_id: int) -> None:
    """Under the customer's row lock: refuse a customer at ``limit_per_customer`` (0: none)."""
    if item.limit_per_customer and (
        Exchange.objects.filter(customer_id=customer_id, item_id=item.pk).count() >= item.limit_per_customer
    ):
        raise LimitExceeded(
            f"每人限兑 {item.limit_per_customer} 次。", item_id=item.pk, limit_per_customer=item.limit_per_customer
        )


def _customer_lock(customer_id: int) -> None:
    """Step 5: the customer's row; a deactivated customer exchanges nothing."""
    if not Customer.objects.select_for_update().filter(pk=customer_id, is_active=True).exists():
        raise CustomerInactive()


def _item_stock_take(item_id: int) -> None:
    """Step 6: one of the item's stock (conditional UPDATE); InsufficientStock when none left."""
    if Item.objects.filter(pk=item_id, is_active=True, stock__gte=1).update(stock=F("stock") - 1) != 1:
        raise InsufficientStock("已兑完。", item_id=item_id)


def item_exchange(*, item_id: int, customer_id: int, address_id: int | None = None) -> Exchange:
    """The customer exchanges points for the item; returns the Exchange (``order_no`` for goods,
    ``coupon`` for a coupon). Raises NotFound (no such active item), InvalidInput (goods
    without an address of the customer), InsufficientBalance (409 ``insufficient_balance``:
    too few points), InsufficientStock (409 ``insufficient_stock``: none left, or the SKU or
    the coupon template has none), LimitExceeded (409 ``limit_exceeded``), CustomerInactive.
    Nothing is kept on any error (module docstring: the one transaction and its lock order)."""
    item = Item.objects.select_related("sku__product", "coupon_template").filter(pk=item_id, is_active=True).first()
    if item is None:
        raise NotFound("没有这个积分商品，或已下架。", item_id=item_id)
    now = timezone.now()
    exchange_no = exchange_no_new(now)
    address = _address(customer_id, address_id) if item.kind == Item.Kind.GOODS else None
    with transaction.atomic():
        order = None
        if item.kind == Item.Kind.GOODS:  # step 1: the new order
            order, _lines = order_rows.order_rows_insert(
                _draft(item, customer_id, address, now),
                customer_id=customer_id,
                order_no=order_no_new(now),
                remark="",
                pay_deadline=now,
                now=now,
            )
        _customer_lock(customer_id)  # step 5
        _limit_check(item, customer_id)
        wallet.points_exchange_debit(
            customer_id=customer_id, points=item.points, ref=exchange_no, order_no=order.order_no if order else ""
        )
        _item_stock_take(item.pk)  # step 6
        coupon = None
        if order is not None:
            stock.sku_stock_decrement(quantities={item.sku_id: 1})  # step 7
            # Paid like any order (follow-ups, sales), then shipped by staff from the order list.
            order_services.order_mark_paid(order=order, method=PayMethod.POINTS, paid_at=now, actor=ACTOR)
        else:
            coupon = coupons.coupon_grant(template=item.coupon_template, customer_id=customer_id, now=now)
            if coupon is None:
                raise InsufficientStock("优惠券已兑完。", item_id=item.pk)
        return Exchange.objects.create(
            exchange_no=exchange_no,
            customer_id=customer_id,
            item=item,
            kind=item.kind,
            points=item.points,
            order_no=order.order_no if order else "",
            coupon=coupon,
        )


def item_stock_adjust(*, item_id: int, delta: int) -> int:
    """Staff add (+) or remove (-) ``delta`` exchanges of stock; returns the stock now.
    ``UPDATE ... SET stock = stock + delta WHERE stock + delta >= 0``: InvalidInput (nothing
    changed) when it would go below 0. Exchanges running meanwhile are never undone."""
    with transaction.atomic():
        if Item.objects.filter(pk=item_id, stock__gte=-delta).update(stock=F("stock") + delta) != 1:
            raise InvalidInput("库存不足，无法减少这么多。", stock_change=["减少的数量不能超过现有库存"])
        return Item.objects.values_list("stock", flat=True).get(pk=item_id)
