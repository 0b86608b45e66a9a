"""The per-customer caps on unpaid orders (API.md Additions), the one place they are written.

At most ``MAX_UNPAID_ORDERS`` unpaid orders and ``MAX_UNPAID_CONSULTATIONS`` unpaid
consultations at once: checked at confirm (:func:`caps_check` with ``new=1``) and enforced in
create's transaction (``new=0``) under the lock of the customer's row that
``apps.orders.create`` takes first: one customer's creates pass that point one at a time, and
under READ COMMITTED the count after the lock sees every order a previous holder committed.
"""

from __future__ import annotations

from django.conf import settings

from apps.catalog.models import Kind
from apps.orders.models import Order, OrderStatus
from starmall.errors import LimitExceeded


def caps_check(*, customer_id: int, kind: str, new: int = 1) -> None:
    """Raise LimitExceeded when the customer's unpaid orders plus ``new`` more of ``kind``
    pass the caps. Confirm passes ``new=1`` (the order it prepares); create passes 0, as its
    own uncommitted order is already in the count. One query on the
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
