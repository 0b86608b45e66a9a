"""Exports of 拼团 groups (one row per member seat) and 砍价 records created in a Shanghai date
range; amounts in yuan, times in Beijing (typed cells), text cells made safe by :mod:`starmall.spreadsheet`
(through ``apps.backoffice.exports``)."""

from __future__ import annotations

from operator import attrgetter, methodcaller

from django.db.models import OuterRef, Subquery

from apps.backoffice.export_table import Export
from apps.marketing.models import BargainRecord, GroupSeat
from apps.orders.models import Order
from starmall.admin_money import yuan_amount

KINDS = {"groups": "拼团", "bargains": "砍价记录"}


def _seats(lo, hi, start, end):
    """Seats of groups opened in ``[lo, hi)``, each with its order's status and pay_fen (one query)."""
    order = Order.objects.filter(order_no=OuterRef("order_no"))
    return (
        GroupSeat.objects.filter(group__created_at__gte=lo, group__created_at__lt=hi)
        .select_related("group__activity", "customer")
        .annotate(
            order_status=Subquery(order.values("status")[:1]), order_pay_fen=Subquery(order.values("pay_fen")[:1])
        )
        .order_by("group_id", "id")
    )


EXPORTS = {
    "groups": Export(
        columns=(
            ("拼团 ID", attrgetter("group.pk")),
            ("活动", attrgetter("group.activity.title")),
            ("拼团状态", lambda s: s.group.get_status_display()),
            ("成团人数", attrgetter("group.group_size")),
            ("已付款人数", attrgetter("group.members")),
            ("截止时间（北京时间）", attrgetter("group.expires_at")),
            ("成团时间（北京时间）", attrgetter("group.done_at")),
            ("失败时间（北京时间）", attrgetter("group.failed_at")),
            ("结束方式", attrgetter("group.ended_by")),
            ("成员", lambda s: str(s.customer)),
            ("团长", lambda s: "是" if s.leader else ""),
            ("订单号", attrgetter("order_no")),
            ("订单状态", lambda s: s.order_status or ""),
            ("实付（元）", lambda s: yuan_amount(s.order_pay_fen) if s.order_status else None),
            ("名额状态", methodcaller("get_status_display")),
            ("参团时间（北京时间）", attrgetter("created_at")),
            ("付款时间（北京时间）", attrgetter("paid_at")),
        ),
        objects=_seats,
    ),
    "bargains": Export(
        columns=(
            ("砍价编号", attrgetter("bargain_no")),
            ("活动", attrgetter("campaign.title")),
            ("发起人", lambda r: str(r.customer)),
            ("原价（元）", lambda r: yuan_amount(r.campaign.original_price_fen)),
            ("当前价（元）", lambda r: yuan_amount(r.price_fen)),
            ("底价（元）", lambda r: yuan_amount(r.floor_price_fen)),
            ("已助力", attrgetter("helpers")),
            ("所需人数", attrgetter("helpers_needed")),
            ("状态", methodcaller("get_status_display")),
            ("截止时间（北京时间）", attrgetter("expires_at")),
            ("订单号", attrgetter("order_no")),
            ("发起时间（北京时间）", attrgetter("created_at")),
        ),
        objects=lambda lo, hi, start, end: (
            BargainRecord.objects.filter(created_at__gte=lo, created_at__lt=hi)
            .select_related("campaign", "customer")
            .order_by("id")
        ),
    ),
}
