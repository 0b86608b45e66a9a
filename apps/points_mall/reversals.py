"""Reversing a points-mall exchange (staff, the back office's 撤销兑换): the customer gets the
points back and the item its stock, once.

:func:`exchange_reverse` is ONE transaction, rows in the lock order of ``starmall/locking.py`` (its
steps numbered at the code): the goods order locked (``paid``, or ``shipped``/``completed`` with
``returned``), the exchange's ``reversed_at`` set by a conditional UPDATE (the once-guard), an unused
coupon withdrawn (a used one refuses), the points back (a RETURN ledger row, UNIQUE ref
``exchange_no``), the item's stock + 1, the order ``refunded`` with its units back in the SKU's
stock. No money moves: the order was paid with points (``pay_method`` ``points``, 0 fen).
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from apps.accounts import wallet
from apps.accounts.models import Coupon, WalletEvent
from apps.orders import services as order_services
from apps.orders.models import Order, OrderStatus
from apps.points_mall.models import Exchange, Item
from starmall.errors import InvalidState, NotFound

SHIPPED = (OrderStatus.SHIPPED, OrderStatus.COMPLETED)


def exchange_reverse(*, exchange_id: int, actor: str, returned: bool = False) -> Exchange:
    """Reverse the exchange ``exchange_id`` (module docstring): goods whose order is not shipped,
    or shipped and ``returned``; a coupon still unused. Returns the reversed Exchange. Raises
    NotFound, InvalidState (reversed already, order shipped and not returned or no longer live,
    coupon used). Nothing is kept on any error."""
    exchange = Exchange.objects.filter(pk=exchange_id).first()
    if exchange is None:
        raise NotFound("没有这条兑换记录。", exchange_id=exchange_id)
    with transaction.atomic():
        order = _order_lock(exchange, returned=returned)  # step 1
        now = timezone.now()
        # Step 2, the once-guard: a second click, or a racing one, gets InvalidState and changes nothing.
        if (
            Exchange.objects.filter(pk=exchange.pk, reversed_at__isnull=True).update(
                reversed_at=now, reversed_by=actor[:64]
            )
            != 1
        ):  # step 2: once
            raise InvalidState("这次兑换已撤销。", exchange_no=exchange.exchange_no)
        if order is not None:  # refunding: its own earned points (none for 0 fen) die
            order_services.order_mark_refunding(order=order, actor=actor)
        elif not _coupon_withdraw(exchange):  # step 4
            raise InvalidState("优惠券已使用，不能撤销兑换。", exchange_no=exchange.exchange_no)
        wallet.points_credit(  # step 5: the ledger row's UNIQUE (reason, ref) holds it to once
            customer_id=exchange.customer_id,
            points=exchange.points,
            reason=WalletEvent.Reason.RETURN,
            ref=exchange.exchange_no,
            order_no=exchange.order_no,
        )
        Item.objects.filter(pk=exchange.item_id).update(stock=F("stock") + 1)  # step 6
        if order is not None:  # steps 7-8: the SKU's units and the product's sales
            order_services.order_mark_refunded(order=order, actor=actor, restock=True)
    exchange.refresh_from_db()
    return exchange


def _order_lock(exchange: Exchange, *, returned: bool) -> Order | None:
    """A goods exchange's order, locked, when it may be reversed; None for a coupon exchange."""
    if exchange.kind != Item.Kind.GOODS:
        return None
    order = order_services.order_lock(
        order_id=Order.objects.values_list("pk", flat=True).get(order_no=exchange.order_no)
    )
    if order.status in SHIPPED and not returned:
        raise InvalidState("已发货的兑换需先收到退回的商品再撤销。", order_no=order.order_no)
    if order.status != OrderStatus.PAID and order.status not in SHIPPED:
        raise InvalidState("订单已不能撤销。", order_no=order.order_no, status=order.status)
    return order


def _coupon_withdraw(exchange: Exchange) -> bool:
    """The exchanged coupon, if still unused, is taken back (``available -> used``, marked with
    the exchange number: it can never be used); False when it was used."""
    return (
        Coupon.objects.filter(pk=exchange.coupon_id, status=Coupon.Status.AVAILABLE).update(
            status=Coupon.Status.USED, used_order_no=exchange.exchange_no
        )
        == 1
    )
