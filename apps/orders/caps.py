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


def caps_check(*, kind: str, unpaid: list[str], new: int = 1) -> None:
    """Raise LimitExceeded when a customer with unpaid orders of kinds ``unpaid``
    (:func:`unpaid_kinds`) and ``new`` more of ``kind`` passes the caps. Confirm passes
    ``new=1`` (the order it prepares)."""
    refused = refusal(kind, unpaid, new=new)
    if refused is not None:
        raise refused


def caps_refusals(orders: list[tuple[int, str]], *, new: int) -> dict[int, LimitExceeded]:
    """``{customer_id: LimitExceeded}`` for the customers of ``orders`` (``[(customer_id,
    kind)]``) whose unpaid orders plus ``new`` more each pass the caps. Create passes ``new=0``:
    its own uncommitted orders are already in the count."""
    unpaid = unpaid_kinds([customer_id for customer_id, _kind in orders])
    refused = {}
    for customer_id, kind in orders:
        found = refusal(kind, unpaid[customer_id], new=new)
        if found is not None:
            refused[customer_id] = found
    return refused


def unpaid_kinds(customer_ids: list[int]) -> dict[int, list[str]]:
    """``{customer_id: [kind of each unpaid order]}``, one query on the (customer, status) index."""
    unpaid: dict[int, list[str]] = {customer_id: [] for customer_id in customer_ids}
    rows = (
        Order.objects.filter(customer_id__in=unpaid, status=OrderStatus.UNPAID)
        .order_by()
        .values_list("customer_id", "kind")
    )
    for customer_id, kind in rows:
        unpaid[customer_id].append(kind)
    return unpaid


def refusal(kind: str, held: list[str], *, new: int) -> LimitExceeded | None:
    """The caps' refusal of ``new`` more orders of ``kind`` beside unpaid orders of kinds ``held``, or None."""
    limit, consultations = settings.MAX_UNPAID_ORDERS, settings.MAX_UNPAID_CONSULTATIONS
    if len(held) + new > limit:
        return LimitExceeded(f"您有 {limit} 个待支付订单，请先支付或取消后再下单。", max_unpaid_orders=limit)
    if kind == Kind.CONSULTATION and held.count(Kind.CONSULTATION) + new > consultations:
        return LimitExceeded(
            "您有一个待支付的咨询预约，请先支付或取消后再预约。", max_unpaid_consultations=consultations
        )
    return None
