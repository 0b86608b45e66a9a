"""Reads of the members app: a customer's level, growth and paid membership (SVIP)."""

from __future__ import annotations

import datetime as dt

from django.db.models import QuerySet
from django.utils import timezone

from apps.members.models import CardPurchase, GrowthEvent, Level, MemberCard, Membership


def levels() -> list[Level]:
    """Every level, lowest ``growth_min`` first."""
    return list(Level.objects.order_by("growth_min"))


def level_for(growth: int, all_levels: list[Level] | None = None) -> Level | None:
    """The highest level whose ``growth_min`` ``growth`` reaches; None when none does (no levels,
    or the lowest needs more)."""
    reached = [level for level in (levels() if all_levels is None else all_levels) if level.growth_min <= growth]
    return reached[-1] if reached else None


def membership_of(customer_id: int) -> Membership | None:
    """The customer's member row (None before their first growth or card)."""
    return Membership.objects.filter(customer_id=customer_id).first()


def svip_expires_at(customer_id: int, *, now: dt.datetime | None = None) -> dt.datetime | None:
    """When the customer's paid membership ends, if it is still running at ``now``; else None."""
    now = now or timezone.now()
    expires = Membership.objects.filter(customer_id=customer_id).values_list("svip_expires_at", flat=True).first()
    return expires if expires is not None and expires > now else None


def svip_active(customer_id: int, *, at: dt.datetime | None = None) -> bool:
    """True while the customer is a paid member (SVIP) at ``at`` (default now)."""
    return svip_expires_at(customer_id, now=at) is not None


def member_overview(*, customer_id: int, now: dt.datetime | None = None) -> dict:
    """``GET /me/member``: ``{"level": {"id", "name", "discount_percent"} or None, "growth",
    "next_level": None or {"name", "growth_min"}, "svip": None or {"expires_at"}}``."""
    now = now or timezone.now()
    membership = membership_of(customer_id)
    growth = membership.growth if membership else 0
    all_levels = levels()
    level = level_for(growth, all_levels)
    upcoming = next((lv for lv in all_levels if lv.growth_min > growth), None)
    expires = membership.svip_expires_at if membership else None
    return {
        "level": {"id": level.pk, "name": level.name, "discount_percent": level.discount_percent} if level else None,
        "growth": growth,
        "next_level": {"name": upcoming.name, "growth_min": upcoming.growth_min} if upcoming else None,
        "svip": {"expires_at": timezone.localtime(expires)} if expires is not None and expires > now else None,
    }


def growth_events(*, customer_id: int) -> QuerySet[GrowthEvent]:
    """``GET /me/growth``: the customer's growth rows that changed something, newest first."""
    return GrowthEvent.objects.filter(customer_id=customer_id).exclude(change=0).order_by("-id")


def cards_on_sale() -> list[MemberCard]:
    """``GET /member-cards``: the active cards in their ``sort`` order."""
    return list(MemberCard.objects.filter(active=True))


def purchase_by_no(purchase_no: str) -> CardPurchase | None:
    """The purchase with this WeChat ``out_trade_no``, or None."""
    return CardPurchase.objects.filter(purchase_no=purchase_no).first()


def gate_card(customer_id: int) -> dict:
    """What the 秒杀 gate needs of the customer's membership (on their address card):
    ``{"svip_until_ms": SVIP expiry in epoch milliseconds, 0 when never SVIP}``."""
    expires = Membership.objects.filter(customer_id=customer_id).values_list("svip_expires_at", flat=True).first()
    return {"svip_until_ms": int(expires.timestamp() * 1000) if expires else 0}
