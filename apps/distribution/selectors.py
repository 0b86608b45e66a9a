"""Reads of distribution for the API and the back office."""

from __future__ import annotations

import datetime as dt

from django.db.models import Count, Q, QuerySet

from apps.distribution.models import Commission, Distributor, Withdrawal
from apps.orders.models import OrderStatus


def team_counts(*, distributor: Distributor) -> tuple[int, int]:
    """``(level 1, level 2)`` team sizes: customers bound to the distributor, and to those."""
    level1 = Distributor.objects.filter(referrer=distributor).count()
    level2 = Distributor.objects.filter(referrer__referrer=distributor).count()
    return level1, level2


def team(*, distributor: Distributor, level: int) -> QuerySet[Distributor]:
    """The team at ``level`` (1 or 2), newest first, each with ``order_count`` (paid orders)."""
    rows = (
        Distributor.objects.filter(referrer=distributor)
        if level == 1
        else Distributor.objects.filter(referrer__referrer=distributor)
    )
    paid = Q(customer__orders__paid_at__isnull=False)
    return (
        rows.select_related("customer")
        .annotate(order_count=Count("customer__orders", filter=paid))
        .order_by("-bound_at", "-id")
    )


def commissions(*, distributor: Distributor, status: str | None = None) -> QuerySet[Commission]:
    rows = Commission.objects.filter(distributor=distributor).select_related("order").order_by("-id")
    return rows.filter(status=status) if status else rows


def commission_available_at(commission: Commission, freeze: dt.timedelta) -> dt.datetime | None:
    """When the commission became (or will become) available: its ``available_at``, else its
    completed order's completion plus the freeze, else None (not completed yet, or reversed)."""
    if commission.available_at:
        return commission.available_at
    order = commission.order
    if commission.status == Commission.Status.FROZEN and order.status == OrderStatus.COMPLETED and order.completed_at:
        return order.completed_at + freeze
    return None


def withdrawals(*, distributor: Distributor) -> QuerySet[Withdrawal]:
    return Withdrawal.objects.filter(distributor=distributor).select_related("transfer").order_by("-id")
