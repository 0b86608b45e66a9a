"""The admin's sidebar, grouped by what staff do (订单, 商品, 营销, 咨询, 财务, 系统 ...): the ONE
mapping from admin pages to groups.

django-unfold calls :func:`sidebar` (``UNFOLD["SIDEBAR"]["navigation"]``) on every page with the
request. Models come from ``admin.site.get_app_list(request)``, so staff see exactly the pages
their permissions open and no group empty for them (the teacher: 咨询 only). A model is placed by
:data:`MODEL_GROUPS` ("app_label.model_name"), else by :data:`APP_GROUPS` (its app), else in a
group named after its app's verbose name at the end: an app added later appears at once, and
moves to its group with one line here.
"""

from __future__ import annotations

from django.contrib import admin
from django.urls import NoReverseMatch, reverse

#: Groups in sidebar order: (title, Material Symbols icon of its entries)
GROUPS: list[tuple[str, str]] = [
    ("订单", "receipt_long"),
    ("商品", "inventory_2"),
    ("营销", "campaign"),
    ("分销", "share"),
    ("店铺内容", "article"),
    ("自提", "storefront"),
    ("咨询", "support_agent"),
    ("公众号", "chat"),
    ("财务", "payments"),
    ("系统", "settings"),
]

#: "app_label.model_name" -> group, for models whose app's group is not theirs
MODEL_GROUPS: dict[str, str] = {
    "accounts.customer": "订单",  # who ordered: customer service looks them up with the order
    "accounts.address": "订单",
    "accounts.coupon": "营销",
    "accounts.walletevent": "财务",
    "accounts.tokenrevocation": "系统",
    "catalog.teacher": "咨询",
    "orders.followup": "系统",
    "payments.invalidnotificationday": "系统",
    "payments.shippinginfo": "订单",  # WeChat's 发货信息: how each order was delivered
    "reviews.review": "商品",
    "shipping.freighttemplate": "商品",
    "distribution.withdrawal": "财务",  # finance approves withdrawals and watches the transfers
    "distribution.transferbill": "财务",
    "stores.pickuporder": "订单",  # a pickup is an order handed over at the counter
    "stores.pickupverification": "订单",
    "accounts.subscribetemplate": "公众号",  # the WeChat messages staff manage together
    "accounts.subscriberefusal": "公众号",
    "accounts.smscode": "系统",
    "members.tag": "营销",  # customer tags: who a campaign (coupons to a tag) reaches
    "members.customertag": "营销",
    "members.cardpurchase": "财务",  # paid-membership sales: WeChat payments like recharges
    "members.membership": "订单",  # a customer's level, growth and SVIP: looked up with the customer
    "members.growthevent": "订单",
}

#: app_label -> group (every model of the app unless MODEL_GROUPS says otherwise)
APP_GROUPS: dict[str, str] = {
    "orders": "订单",
    "catalog": "商品",
    "marketing": "营销",  # coupons, flash sales, sign-in, group buys, bargains
    "points_mall": "营销",  # items for points, exchanges
    "crm": "营销",  # coupons issued to a tag
    "members": "营销",  # levels, growth, member cards (SVIP)
    "distribution": "分销",
    "content": "店铺内容",
    "stores": "自提",
    "printing": "订单",  # receipt printers, print jobs and waybills: done with the orders
    "appointments": "咨询",
    "chat": "咨询",
    "almanac": "咨询",
    "wechat_official": "公众号",
    "payments": "财务",
    "alerts": "系统",
    "auth": "系统",
    "axes": "系统",
    "starmall": "系统",
    "backoffice": "系统",
}

#: The back office's own pages: (group, label, url name, permission or None = any staff)
PAGES: list[tuple[str, str, str, str | None]] = [
    ("咨询", "老师周历", "admin:backoffice_week", "appointments.view_slot"),
    ("咨询", "黄历月历", "admin:backoffice_almanac", "almanac.view_almanacday"),
    ("财务", "导出数据", "admin:backoffice_export", "backoffice.export_data"),
]


def group_of(app_label: str, model_name: str, app_name: str) -> str:
    """The sidebar group of a model: :data:`MODEL_GROUPS`, else :data:`APP_GROUPS`, else its
    app's verbose name ``app_name`` (a group of its own, after the known ones)."""
    return MODEL_GROUPS.get(f"{app_label}.{model_name}") or APP_GROUPS.get(app_label) or app_name


def sidebar(request) -> list[dict]:
    """django-unfold's ``SIDEBAR["navigation"]``: ``[{"title", "separator", "items": [{"title",
    "icon", "link"}]}]`` — 工作台 first, then the groups of :data:`GROUPS` that hold a page this
    user may open, then fallback groups in app order."""
    grouped: dict[str, list[dict]] = {}
    icons = dict(GROUPS)
    for app in admin.site.get_app_list(request):
        for model in app["models"]:
            link = model.get("admin_url") or model.get("add_url")
            if not link:
                continue
            group = group_of(app["app_label"], model["object_name"].lower(), str(app["name"]))
            grouped.setdefault(group, []).append(
                {"title": str(model["name"]), "link": link, "icon": icons.get(group, "folder")}
            )
    for group, label, url_name, perm in PAGES:
        if perm is not None and not request.user.has_perm(perm):
            continue
        try:
            link = reverse(url_name)
        except NoReverseMatch:
            continue
        grouped.setdefault(group, []).append({"title": label, "link": link, "icon": icons.get(group, "folder")})
    order = [title for title, _ in GROUPS] + [title for title in grouped if title not in icons]
    navigation = [
        {
            "title": None,
            "separator": False,
            "items": [{"title": "工作台", "icon": "dashboard", "link": reverse("admin:index")}],
        }
    ]
    navigation += [
        {"title": title, "separator": True, "collapsible": False, "items": grouped[title]}
        for title in order
        if grouped.get(title)
    ]
    return navigation
