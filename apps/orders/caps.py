"""The per-customer caps on unpaid orders (API.md Additions), the one place they are written.

At most ``MAX_UNPAID_ORDERS`` unpaid orders and ``MAX_UNPAID_CONSULTATIONS`` unpaid
consultations at once: checked at confirm (:func:`caps_check` with ``new=1``) and enforced in
create's transaction under a lock of the customer's row (:func:`caps_enforce`).
"""

from __future__ import annotations

from django.conf import settings

from apps.accounts import wallet
from apps.catalog.models import Kind
from apps.orders.models import Order, OrderStatus
from starmall.errors import LimitExceeded


def caps_check(*, customer_id: int, kind: str, new: int = 1) -> None:
    """Raise LimitExceeded when the customer's unpaid orders plus ``new`` more of ``kind``
    pass the caps. Confirm passes ``new=1`` (the order it prepares); create passes 0, as its
    own uncommitted order is already in the count (:func:`caps_enforce`). One query on the
    (customer, status) index.
    """
    unpaid = list(
        Order.objects.filter(customer_id=customer_id, status=OrderStatus.UNPAID)
        .order_by()
        .values_list("kind", flat=True)[: settings.MAX_UNPAID_ORDERS + 1]
    )
    limit = settings.MAX_UNPAID_ORDERS
    if len(unpaid) + new > limit:
        raise LimitExceeded(f"您有 {limit} 个待支付订单，请先支付或取消后再下单。", max_unpaid_orders=limit)
    if kind == Kind.CONSULTATION and unpaid.count(Kind.CONSULTATION) + new > settings.MAX_UNPAID_CONSULTATIONS:
        raise LimitExceeded(
            "您有一个待支付的咨询预约，请先支付或取消后再预约。",
            max_unpaid_consultations=settings.MAX_UNPAID_CONSULTATIONS,
        )


def caps_enforce(*, customer_id: int, kind: str) -> None:
    """The caps inside create's transaction, after the new order row was inserted.

    The customer's row is locked (``SELECT ... FOR UPDATE``) so that creates of one customer
    pass this point one at a time; under READ COMMITTED the count that follows the lock sees
    every order a previous holder committed, plus our own uncommitted one. A counter column
    would need a decrement on every way out of ``unpaid`` (paid, cancelled, by any path);
    the lock needs nothing but this check. In create the lock comes after the slot and the
    coupon and before the flash sale and the stock — step 5 of the lock order in
    ``starmall/locking.py``, where cancel, payment and refund reach the customer's row too, so
    none of them can deadlock with a create; only one customer's own creates wait for each other.
    """
    wallet.customer_lock(customer_id=customer_id)
    caps_check(customer_id=customer_id, kind=kind, new=0)
