"""Reads of the activities for the mini-program: 秒杀 and 拼团 lists, a 拼团 group's page and its
shape in an order."""

from __future__ import annotations

import datetime as dt

from django.db.models import F, QuerySet
from django.utils import timezone

from apps.marketing.models import FlashSale, Group, GroupBuy, GroupSeat
from starmall.errors import NotFound

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


# --- 拼团: what the API shows -------------------------------------------------------------------


def _time(value: dt.datetime | None) -> str | None:
    return timezone.localtime(value).isoformat() if value else None


def group_json(group: Group) -> dict:
    """The ``group`` of an order (API.md): ``{"group_id", "status", "members", "group_size", "expires_at"}``;
    ``members`` counts seats held by paid orders."""
    return {
        "group_id": group.pk,
        "status": group.status,
        "members": group.members,
        "group_size": group.group_size,
        "expires_at": _time(group.expires_at),
    }


def group_detail(*, group_id: int) -> dict:
    """The public group page (API.md ``GET /groups/{id}``); members listed are the paid seats,
    leader first. Raises NotFound."""
    group = Group.objects.filter(pk=group_id).first()
    if group is None:
        raise NotFound("没有这个拼团。", group_id=group_id)
    seats = (
        GroupSeat.objects.filter(group=group, status__in=(GroupSeat.Status.PAID,))
        .select_related("customer")
        .order_by("-leader", "paid_at", "pk")
    )
    if group.status == Group.Status.DONE:  # a completed group shows who bought, even if one refunded later
        seats = (
            GroupSeat.objects.filter(group=group, paid_at__isnull=False)
            .select_related("customer")
            .order_by("-leader", "paid_at", "pk")
        )
    return {
        "group_id": group.pk,
        "group_buy_id": group.activity_id,
        "status": group.status,
        "members": [
            {"nickname": s.customer.nickname, "avatar_url": s.customer.avatar_url, "leader": s.leader} for s in seats
        ],
        "group_size": group.group_size,
        "expires_at": _time(group.expires_at),
    }


def groups_open(*, group_buy_id: int, now: dt.datetime | None = None, limit: int = 50) -> list[dict]:
    """Open groups anyone may join (API.md): forming, the leader paid, not expired, a seat free;
    closest to its deadline first. Raises NotFound for an unknown activity."""
    now = now or timezone.now()
    if not GroupBuy.objects.filter(pk=group_buy_id).exists():
        raise NotFound("没有这个拼团活动。", group_buy_id=group_buy_id)
    groups = (
        Group.objects.filter(
            activity_id=group_buy_id, status=Group.Status.FORMING, expires_at__gt=now, seats__lt=F("group_size")
        )
        .select_related("leader")
        .order_by("expires_at", "pk")[:limit]
    )
    return [
        {
            "group_id": g.pk,
            "leader": {"nickname": g.leader.nickname, "avatar_url": g.leader.avatar_url},
            "members": g.members,
            "group_size": g.group_size,
            "expires_at": _time(g.expires_at),
        }
        for g in groups
    ]


def group_buy_list(*, status: str | None = None, now: dt.datetime | None = None):
    """Active 拼团 activities of SKUs on sale (``live``, ``upcoming`` or both), at most 100 (:func:`activities_listed`)."""
    return activities_listed(GroupBuy, status=status, now=now)
