"""Reads for orders."""

from django.db.models import Count, Q, QuerySet

from apps.orders.models import Order, OrderStatus


def order_list(*, customer_id: int, status: str | None = None) -> QuerySet[Order]:
    """The customer's orders, newest first, with lines, slot, shipment and after-sales loaded."""
    qs = (
        Order.objects.filter(customer_id=customer_id)
        .select_related("slot__teacher", "shipment", "group")
        .prefetch_related("lines", "after_sales")
    )
    if status:
        qs = qs.filter(status=status)
    return qs.order_by("-id")


def order_counts(*, customer_id: int) -> dict[str, int]:
    """``{status: number of the customer's orders in it}`` for every status (0 included): the
    "my orders" badges, equal to the ``count`` of ``order_list(customer_id=, status=)`` for each.
    ONE query (conditional aggregation: ``COUNT(*) FILTER (WHERE status = ...)`` per status) on
    the (customer, status) index."""
    return Order.objects.filter(customer_id=customer_id).aggregate(
        **{status: Count("id", filter=Q(status=status)) for status in OrderStatus.values}
    )
