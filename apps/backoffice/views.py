"""Back-office pages (thin: permission check, one selector, a template)."""

from __future__ import annotations

from django.urls import NoReverseMatch, reverse

from apps.backoffice import selectors, selectors_groups
from starmall.admin_money import yuan

#: To-do panel rows: (key in selectors.todo_counts, label, changelist, query string, permission to see it)
TODO = [
    ("alerts_open", "未处理告警", "admin:alerts_alert_changelist", "handled=no", "alerts.view_alert"),
    (
        "to_ship",
        "待发货订单",
        "admin:orders_order_changelist",
        "status__exact=paid&kind__exact=goods&delivery__exact=express",
        "orders.view_order",
    ),
    (
        "pickups_waiting",
        "待自提订单",
        "admin:stores_pickuporder_changelist",
        "status__exact=paid",
        "stores.view_pickuporder",
    ),
    (
        "aftersales",
        "待审核退款申请",
        "admin:orders_aftersale_changelist",
        "status__exact=requested",
        "orders.view_aftersale",
    ),
    (
        "manual",
        "待人工确认的支付",
        "admin:payments_payment_changelist",
        "status__exact=manual",
        "payments.view_payment",
    ),
    (
        "refunds_failed",
        "失败的退款",
        "admin:payments_refund_changelist",
        "status__exact=failed",
        "payments.view_refund",
    ),
    (
        "followups_failed",
        "失败的后续任务",
        "admin:orders_followup_changelist",
        "status__exact=failed",
        "orders.view_followup",
    ),
    (
        "reconciliation",
        "对账差异（近30天）",
        "admin:payments_reconciliationrun_changelist",
        "status__in=differences,error",
        "payments.view_reconciliationrun",
    ),
    (
        "withdrawals_pending",
        "待审核提现",
        "admin:distribution_withdrawal_changelist",
        "status__exact=pending",
        "distribution.view_withdrawal",
    ),
    (
        "low_stock",
        f"低库存 SKU（≤{selectors.LOW_STOCK}）",
        "admin:catalog_sku_changelist",
        f"stock__lte={selectors.LOW_STOCK}&is_active__exact=1",
        "catalog.view_sku",
    ),
]


#: Shortcuts on the index: (label, url name, permission)
LINKS = [
    ("导出数据（CSV / Excel）", "admin:backoffice_export", "backoffice.export_data"),
    ("老师周历", "admin:backoffice_week", "appointments.view_slot"),
    ("黄历月历", "admin:backoffice_almanac", "almanac.view_almanacday"),
]


def _links(request) -> list[dict]:
    out = []
    for label, name, perm in LINKS:
        try:
            url = reverse(name)
        except NoReverseMatch:  # a page not built (yet)
            continue
        if request.user.has_perm(perm):
            out.append({"label": label, "url": url})
    return out


def dashboard_callback(request, context: dict) -> dict:
    """django-unfold's DASHBOARD_CALLBACK: the admin index gets the dashboard (staff who may
    see orders) — figures from :func:`apps.backoffice.selectors.dashboard`, money as yuan.
    Money (revenue, average order value, refund amounts, the revenue line) only for staff with
    ``backoffice.view_revenue`` (the owner and finance); the others see counts."""
    context["backoffice_links"] = _links(request)
    if not request.user.has_perm("orders.view_order"):
        return context
    data = selectors.dashboard()
    todo = [
        {"label": label, "count": data["todo"][key], "url": f"{reverse(url)}?{query}"}
        for key, label, url, query, perm in TODO
        if request.user.has_perm(perm)
    ] + selectors_groups.group_lines(request)  # 拼团: forming, done/failed today, their refunds
    money = request.user.has_perm("backoffice.view_revenue")
    cards = []
    for block in (data["today"], data["month"]):
        card = {key: value for key, value in block.items() if not key.endswith("_fen")}
        if money:
            card.update(
                revenue=yuan(block["revenue_fen"]),
                refund=yuan(block["refund_fen"]),
                aov=yuan(block["aov_fen"]),
                commission=yuan(block["commission_fen"]),
                svip_sales=yuan(block["svip_sales_fen"]),
            )
        cards.append(card)
    chart = {
        "days": [row["day"].strftime("%m-%d") for row in data["revenue_by_day"]],
        "revenue": [row["revenue_fen"] / 100 for row in data["revenue_by_day"]],
        "orders": [row["orders"] for row in data["revenue_by_day"]],
        "teachers": [row["teacher_name"] for row in data["occupancy_next"]],
        "occupancy_next": [row["rate"] for row in data["occupancy_next"]],
        "occupancy_past": {row["teacher_name"]: row["rate"] for row in data["occupancy_past"]},
    }
    chart["occupancy_past"] = [chart["occupancy_past"].get(name, 0) for name in chart["teachers"]]
    if not money:
        del chart["revenue"]
    context.update(
        {
            "dashboard": {
                "cards": cards,
                "todo": todo,
                "money": money,
                "top_products": [
                    {key: value for key, value in row.items() if key != "amount_fen"}
                    | ({"amount": yuan(row["amount_fen"])} if money else {})
                    for row in data["top_products"]
                ],
                "occupancy_next": data["occupancy_next"],
                "occupancy_past": data["occupancy_past"],
            },
            "dashboard_chart": chart,
        }
    )
    return context
