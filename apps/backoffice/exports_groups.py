"""Exports of 拼团 groups (one row per member seat) and 砍价 records created in a Shanghai date
range; amounts in yuan, times in Shanghai, text cells made safe by :mod:`starmall.spreadsheet`
(through ``apps.backoffice.exports``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

from apps.marketing.models import BargainRecord, GroupSeat
from apps.orders.models import Order
from starmall.admin_display import shanghai
from starmall.admin_money import yuan_amount

KINDS = {"groups": "拼团", "bargains": "砍价记录"}
CHUNK = 2000


def rows(kind: str, lo: dt.datetime, hi: dt.datetime) -> Iterator[list]:
    """Header, then the rows of ``kind`` (groups: seats of groups opened in [lo, hi); bargains:
    records started in it)."""
    if kind == "groups":
        yield [
            "拼团 ID",
            "活动",
            "拼团状态",
            "成团人数",
            "已付款人数",
            "截止时间",
            "成团时间",
            "失败时间",
            "结束方式",
            "成员",
            "团长",
            "订单号",
            "订单状态",
            "实付（元）",
            "名额状态",
            "参团时间",
            "付款时间",
        ]
        seats = (
            GroupSeat.objects.filter(group__created_at__gte=lo, group__created_at__lt=hi)
            .select_related("group__activity", "customer")
            .order_by("group_id", "id")
        )
        for s in seats.iterator(chunk_size=CHUNK):
            g = s.group
            order = Order.objects.filter(order_no=s.order_no).values_list("status", "pay_fen").first()
            yield [
                g.pk,
                g.activity.title,
                g.get_status_display(),
                g.group_size,
                g.members,
                shanghai(g.expires_at),
                shanghai(g.done_at),
                shanghai(g.failed_at),
                g.ended_by,
                str(s.customer),
                "是" if s.leader else "",
                s.order_no,
                order[0] if order else "",
                yuan_amount(order[1]) if order else None,
                s.get_status_display(),
                shanghai(s.created_at),
                shanghai(s.paid_at),
            ]
    elif kind == "bargains":
        yield [
            "砍价编号",
            "活动",
            "发起人",
            "原价（元）",
            "当前价（元）",
            "底价（元）",
            "已助力",
            "所需人数",
            "状态",
            "截止时间",
            "订单号",
            "发起时间",
        ]
        records = (
            BargainRecord.objects.filter(created_at__gte=lo, created_at__lt=hi)
            .select_related("campaign", "customer")
            .order_by("id")
        )
        for r in records.iterator(chunk_size=CHUNK):
            yield [
                r.bargain_no,
                r.campaign.title,
                str(r.customer),
                yuan_amount(r.campaign.original_price_fen),
                yuan_amount(r.price_fen),
                yuan_amount(r.floor_price_fen),
                r.helpers,
                r.helpers_needed,
                r.get_status_display(),
                shanghai(r.expires_at),
                r.order_no,
                shanghai(r.created_at),
            ]
    else:
        raise KeyError(kind)
