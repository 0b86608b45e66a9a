"""Members in the exports: paid member card purchases of a Shanghai date range (SVIP sales,
refunds), and the member columns the orders export adds (the customer's level and SVIP expiry
as they stand at export time: ``member_annotations``, no query per row)."""

from __future__ import annotations

from operator import attrgetter, methodcaller

from django.db.models import F, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

from apps.backoffice.export_table import Export
from apps.members.models import CardPurchase, Level
from starmall.admin_money import yuan_amount

KINDS = {"member_cards": "付费会员卡"}


def member_annotations(customer: str = "customer") -> dict:
    """``queryset.annotate(**member_annotations())`` on rows with a ``customer``: ``member_level``
    (the name of the highest level their growth reaches, None without levels) and
    ``member_svip_until`` (their SVIP expiry, None when never SVIP)."""
    growth = Coalesce(OuterRef(f"{customer}__membership__growth"), Value(0))
    level = Level.objects.filter(growth_min__lte=growth).order_by("-growth_min").values("name")[:1]
    return {"member_level": Subquery(level), "member_svip_until": F(f"{customer}__membership__svip_expires_at")}


#: The orders export's member columns (``apps.backoffice.exports``), read from :func:`member_annotations`.
ORDER_COLUMNS = (
    ("顾客会员等级（导出时）", attrgetter("member_level")),
    ("付费会员到期（北京时间）", attrgetter("member_svip_until")),
)

EXPORTS = {
    "member_cards": Export(
        columns=(
            ("购买单号", attrgetter("purchase_no")),
            ("顾客", lambda p: str(p.customer)),
            ("会员卡", attrgetter("card_name")),
            ("天数", attrgetter("days")),
            ("状态", methodcaller("get_status_display")),
            ("支付（元）", lambda p: yuan_amount(p.pay_fen)),
            ("已退（元）", lambda p: yuan_amount(p.refunded_fen)),
            ("支付接口", attrgetter("api")),
            ("微信支付单号", lambda p: p.transaction_id or ""),
            ("支付时间（北京时间）", attrgetter("paid_at")),
            ("生效时间（北京时间）", attrgetter("starts_at")),
            ("到期时间（北京时间）", attrgetter("ends_at")),
            ("顾客会员等级（导出时）", attrgetter("member_level")),
        ),
        objects=lambda lo, hi, start, end: (
            CardPurchase.objects.filter(paid_at__gte=lo, paid_at__lt=hi)
            .select_related("customer")
            .annotate(**{k: v for k, v in member_annotations().items() if k == "member_level"})
            .order_by("id")
        ),
    ),
}
