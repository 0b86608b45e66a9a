"""Reads for orders."""

from django.db.models import QuerySet

from apps.orders.models import Order


def order_list(*, customer_id: int, status: str | None = None) -> QuerySet[Order]:
    """The customer's orders, newest first, with lines, slot, shipment and after-sales loaded."""
    qs = (Order.objects.filter(customer_id=customer_id).select_related("slot__teacher", "shipment", "group")
          .prefetch_related("lines", "after_sales"))
    if status:
        qs = qs.filter(status=status)
    return qs.order_by("-id")
