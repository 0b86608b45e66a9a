"""Dashboard lines for 拼团 (one COUNT each, Shanghai "today"): groups forming now, completed and
failed today, and the refunds failed groups caused today (requests with the automatic reason,
count and yuan)."""

from __future__ import annotations

import datetime as dt

from django.db.models import Count, Sum
from django.urls import reverse
from django.utils import timezone

from apps.marketing.models import Group
from apps.orders.models import AfterSale
from apps.payments.group_refunds import GROUP_FAILED_REASON
from starmall.admin_money import yuan


def group_counts(now: dt.datetime | None = None) -> dict:
    """``{"forming", "done_today", "failed_today", "refunds_today", "refund_fen_today"}``."""
    local = timezone.localtime(now or timezone.now())
    today = local.replace(hour=0, minute=0, second=0, microsecond=0)
    refunds = AfterSale.objects.filter(reason=GROUP_FAILED_REASON, created_at__gte=today).aggregate(
        n=Count("id"), fen=Sum("amount_fen")
    )
    return {
        "forming": Group.objects.filter(status=Group.Status.FORMING).count(),
        "done_today": Group.objects.filter(done_at__gte=today).count(),
        "failed_today": Group.objects.filter(failed_at__gte=today).count(),
        "refunds_today": refunds["n"] or 0,
        "refund_fen_today": refunds["fen"] or 0,
    }


def group_lines(request, now: dt.datetime | None = None) -> list[dict]:
    """The to-do panel's 拼团 rows (``{"label", "count", "url"}``) for staff who may see groups."""
    if not request.user.has_perm("marketing.view_group"):
        return []
    counts = group_counts(now)
    groups = reverse("admin:marketing_group_changelist")
    return [
        {"label": "拼团中", "count": counts["forming"], "url": f"{groups}?status__exact=forming"},
        {"label": "今日成团", "count": counts["done_today"], "url": f"{groups}?status__exact=done"},
        {"label": "今日未成团", "count": counts["failed_today"], "url": f"{groups}?status__exact=failed"},
        {
            "label": f"今日拼团失败退款（{yuan(counts['refund_fen_today'])} 元）",
            "count": counts["refunds_today"],
            "url": f"{groups}?status__exact=failed",
        },
    ]
