"""Reads of flash sales (秒杀) for the mini-program."""

from __future__ import annotations

import datetime as dt

from django.db.models import QuerySet
from django.utils import timezone

from apps.marketing.models import FlashSale

MAX_LISTED = 100  # a bare list (API.md): bounded so that it stays one small query


def activities_listed(model, *, status: str | None = None, now: dt.datetime | None = None) -> QuerySet:
    """Active activities of ``model`` (FlashSale, GroupBuy, BargainCampaign: each has ``sku``,
    ``is_active``, ``starts_at``, ``ends_at``) whose SKU is on sale: ``status="live"``
    (``starts_at <= now < ends_at``, ending soonest first), ``"upcoming"`` (``now < starts_at``,
    starting soonest first) or None (both, by start). At most 100 rows; SKU and product joined
    (one query). ``now``: aware, default now."""
    now = now or timezone.now()
    qs = model.objects.select_related("sku__product").filter(
        is_active=True, ends_at__gt=now, sku__is_active=True, sku__product__is_active=True
    )
    if status == "live":
        qs = qs.filter(starts_at__lte=now).order_by("ends_at", "id")
    elif status == "upcoming":
        qs = qs.filter(starts_at__gt=now).order_by("starts_at", "id")
    else:
        qs = qs.order_by("starts_at", "id")
    return qs[:MAX_LISTED]


def flash_sale_list(*, status: str | None = None, now: dt.datetime | None = None) -> QuerySet[FlashSale]:
    """The 秒杀 list of the mini-program (:func:`activities_listed`)."""
    return activities_listed(FlashSale, status=status, now=now)
