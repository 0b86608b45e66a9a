"""Reads of the points mall."""

from django.db.models import QuerySet

from apps.points_mall.models import Item


def items_listed() -> QuerySet[Item]:
    """``GET /points-mall``: active items, staff's order (``sort`` descending, newest first);
    sold-out items stay listed with ``stock`` 0."""
    return Item.objects.filter(is_active=True).order_by("-sort", "-id")[:200]
