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
    """Raise LimitExceeded when the customer's unpaid orders plus ``new`` more of ``kind`` pass
    the caps (:func:`caps_refusals` of one). Confirm passes ``new=1`` (the order it prepares)."""
    refused = caps_refusals([(customer_id, kind)], new=new)
    if refused:
        raise refused[customer_id]


def caps_refusals(orders: list[tuple[int, str]], *, new: int) -> dict[int, LimitExceeded]:
    """``{customer_id: LimitExceeded}`` for the customers of ``orders`` (``[(customer_id,
    kind)]``) whose unpaid orders plus ``new`` more each pass the caps. Create passes ``new=0``:
    its own uncommitted orders are already in the count. One query on the (customer, status) index."""
    unpaid: dict[int, list[str]] = {customer_id: [] for customer_id, _kind in orders}
    rows = (
        Order.objects.filter(customer_id__in=unpaid, status=OrderStatus.UNPAID)
        .order_by()
        .values_list("customer_id", "kind")
    )
    for customer_id, kind in rows:
        unpaid[customer_id].append(kind)
    limit, consultations = settings.MAX_UNPAID_ORDERS, settings.MAX_UNPAID_CONSULTATIONS
    refused = {}
    for customer_id, kind in orders:
        held = unpaid[customer_id]
        if len(held) + new > limit:
            refused[customer_id] = LimitExceeded(
                f"您有 {limit} 个待支付订单，请先支付或取消后再下单。", max_unpaid_orders=limit
            )
        elif kind == Kind.CONSULTATION and held.count(Kind.CONSULTATION) + new > consultations:
            refused[customer_id] = LimitExceeded(
                "您有一个待支付的咨询预约，请先支付或取消后再预约。", max_unpaid_consultations=consultations
            )
    return refused
