"""The order list's search box: one term finds an order by its number, the account's phone, the
receiver's phone, the tracking number (each exactly), the receiver's name or the nickname (each by
its start), or the openid (exactly).

Every match is an index lookup, also with a million orders: no ``LIKE '%x%'`` and no OR across
joined tables (which would scan the orders). The matching customers and shipments are looked up
first (small indexed queries, capped), then the orders are filtered on their own indexed columns
only, which PostgreSQL answers with one BitmapOr. The pickup code is never searched
(``apps.orders.admin.PickupCodeHidden``).
"""

from __future__ import annotations

from django.db.models import Q, QuerySet

from apps.accounts.models import Customer
from apps.orders.models import Order, Shipment

HELP_TEXT = "订单号、手机号（下单账号或收货人）、快递单号：完整输入；收货人姓名、昵称：输入开头即可"

#: at most this many customers (a common nickname start) or shipments feed one search
MATCH_CAP = 500


def order_search_q(term: str) -> Q | None:
    """The filter on ``Order`` for the search box's ``term`` (stripped); ``None`` for an empty term.
    Runs the customer and shipment lookups (two indexed queries)."""
    term = (term or "").strip()
    if not term:
        return None
    customer_ids = list(
        Customer.objects.filter(Q(phone=term) | Q(nickname__startswith=term) | Q(openid=term))
        .order_by()
        .values_list("pk", flat=True)[:MATCH_CAP]
    )
    shipped_ids = list(
        Shipment.objects.filter(tracking_no=term).order_by().values_list("order_id", flat=True)[:MATCH_CAP]
    )
    # The orders' own columns: order_no (unique), receiver_phone / receiver_name (stored generated
    # columns of the address snapshot, indexed; the name with text_pattern_ops on PostgreSQL so that
    # LIKE 'x%' uses it), customer_id and id.
    rule = Q(order_no=term) | Q(receiver_phone=term) | Q(receiver_name__startswith=term)
    if customer_ids:
        rule |= Q(customer_id__in=customer_ids)
    if shipped_ids:
        rule |= Q(pk__in=shipped_ids)
    return rule


def order_search(queryset: QuerySet[Order], term: str) -> QuerySet[Order]:
    """``queryset`` narrowed to the orders :func:`order_search_q` finds (unchanged for an empty term)."""
    rule = order_search_q(term)
    return queryset if rule is None else queryset.filter(rule)


def receiver_text(order: Order) -> str:
    """The receiver as the order page shows them: "张三 13800000000" ("-" without an address:
    pickup and consultation orders)."""
    text = " ".join(part for part in (order.receiver_name, order.receiver_phone) if part)
    return text or "-"
