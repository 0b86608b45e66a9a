"""The shop's staff roles as Django groups, each holding the named permissions its staff task needs.

``sync_roles`` is idempotent: the data migration ``0002_roles`` calls it, and so does ``make run``
(``runshop``), so permissions that appear later (e.g. the chat app's) are added to the roles that
read them. A permission that does not exist (yet) is skipped, never an error. Each entry is
"app_label.codename", or "app_label.view_*" for every view permission of an app.
``permission_names_sync`` (after every ``migrate``) names the permissions in Chinese, as the group
editor lists them: Django creates its own four as "Can add <model>" and never renames a permission
whose name changed in ``Meta.permissions``.
"""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase

from django.apps import apps as global_apps
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS
from django.utils import translation

from apps.payments import staff_limits
from starmall.admin_money import yuan
from starmall.staff_roles import role_names

#: Django's default permissions (``Meta.default_permissions``) -> the verb shown
BUILTIN_VERBS = {"add": "添加", "change": "修改", "delete": "删除", "view": "查看"}

#: group name -> permissions ("app.codename" or "app.view_*")
ROLES: dict[str, list[str]] = {
    "运营": [  # operations: catalog, stock, shipping, flash sales, orders to look at
        "catalog.view_*",
        "catalog.add_product",
        "catalog.change_product",
        "catalog.add_sku",
        "catalog.change_sku",
        "catalog.change_stock",
        "catalog.add_category",
        "catalog.change_category",
        "orders.view_order",
        "orders.view_orderline",
        "orders.view_shipment",
        "orders.view_orderevent",
        "orders.view_aftersale",
        "orders.ship_order",
        "payments.upload_shipping_info",  # 重新上传发货信息 (WeChat's shipping information)
        "payments.view_shippinginfo",
        "orders.complete_order",  # lines: what to pack
        "orders.edit_address",
        "orders.edit_merchant_remark",  # the order workbench, before shipping
        "orders.receive_return",  # operations receive the parcels, returns included: confirming one refunds it
        # printing: the printers, 打印小票 and 电子面单 (a waybill ships: with orders.ship_order), the jobs
        "printing.view_printer",
        "printing.add_printer",
        "printing.change_printer",
        "printing.print_order",
        "printing.view_printjob",
        "orders.change_price_limited",  # 改价 within OPS_PRICE_CHANGE_PERCENT of the goods (MONEY_ACTIONS)
        "marketing.view_*",
        "marketing.add_flashsale",
        "marketing.change_flashsale",
        "marketing.manage_flashsale",
        "marketing.add_groupbuy",
        "marketing.change_groupbuy",
        "marketing.manage_groupbuy",  # 拼团, ending groups
        "marketing.add_bargaincampaign",
        "marketing.change_bargaincampaign",
        "marketing.manage_bargain",  # 砍价
        "backoffice.view_dashboard",
        # the storefront: home-page blocks, articles; pickup stores and who staffs them
        "content.view_*",
        "content.add_*",
        "content.change_*",
        "content.delete_*",
        "stores.view_*",
        "stores.add_store",
        "stores.change_store",
        "stores.add_storestaff",
        "stores.change_storestaff",
        "stores.delete_storestaff",
        # distribution: rates, channel codes (渠道二维码), distributors and commissions to look at
        "distribution.view_distributor",
        "distribution.view_commission",
        "distribution.view_ledgerentry",
        "distribution.view_commissionsettings",
        "distribution.view_productcommission",
        "distribution.view_channel",
        "distribution.view_promotioncode",  # withdrawals and transfers are finance's (财务)
        "distribution.change_commissionsettings",
        "distribution.add_productcommission",
        "distribution.change_productcommission",
        "distribution.add_channel",
        "distribution.change_channel",
        # the points mall (items; exchanges to look at) and customer tags (rules, tagging by hand)
        "points_mall.view_*",
        "points_mall.add_item",
        "points_mall.change_item",
        "points_mall.reverse_exchange",  # points and the item's stock back (no money moves)
        "members.view_tag",
        "members.add_tag",
        "members.change_tag",
        "members.view_customertag",
        "members.add_customertag",
        "members.delete_customertag",
        "crm.view_*",
        "accounts.view_customer",
        # members: levels and member cards (SVIP); member rows and growth to look at (purchases: 财务)
        "members.view_level",
        "members.view_membercard",
        "members.view_membership",
        "members.view_growthevent",
        "members.add_level",
        "members.change_level",
        "members.add_membercard",
        "members.change_membercard",
    ],
    "客服": [  # customer service: orders, after-sale requests, reading chats
        "orders.view_order",
        "orders.view_orderline",
        "orders.view_orderevent",
        "orders.view_aftersale",
        "orders.view_followup",
        "accounts.view_customer",
        "accounts.view_address",
        "payments.view_refund",
        "orders.approve_small_refund",  # refunds up to SERVICE_REFUND_LIMIT_FEN (MONEY_ACTIONS)
        "printing.print_order",  # 打印小票 (电子面单 ships the order: operations')
        "printing.view_printjob",
        "appointments.view_booking",
        "appointments.mark_attendance",  # attended / no_show / teacher_absent (a full refund)
        "appointments.view_waitlistentry",  # who waits for a full date, and whether they heard
        "members.view_membership",  # a customer's level, growth and SVIP (订单 › 会员信息)
        "members.view_growthevent",
        "chat.view_*",
        "alerts.view_*",
    ],
    "财务": [  # finance: refund approval, manual payments, reconciliation, exports
        "orders.view_order",
        "orders.view_orderevent",
        "orders.view_aftersale",
        "orders.decide_aftersale",
        "payments.view_*",
        "members.view_cardpurchase",
        "payments.resolve_payment",
        "payments.retry_refund",
        "payments.run_reconciliation",
        "payments.batch_refund",
        "orders.change_price",
        "orders.edit_merchant_remark",  # 改价: money
        "backoffice.export_data",
        "backoffice.view_dashboard",
        "backoffice.view_revenue",  # money: owner and finance
        "alerts.view_*",
        "alerts.resolve_alert",
        "distribution.view_*",
        "distribution.decide_withdrawal",  # withdrawals: approve, reject, query transfers
    ],
    "老师": [  # a teacher: own schedule and chats (querysets are limited to the linked teacher)
        "appointments.view_slot",
        "appointments.change_slot",
        "appointments.manage_slot",
        "appointments.view_booking",
        "appointments.mark_attendance",  # their own bookings (the admin's queryset)
        "appointments.view_waitlistentry",  # their own dates' waitlists
        "chat.view_*",
        "chat.add_message",
    ],
    "门店店员": [  # a pickup store's staff: their store's pickup orders, verifying codes (StoreStaff binds the store)
        "stores.view_store",
        "stores.view_pickuporder",
        "stores.view_pickupverification",
        "stores.verify_pickup",
    ],
    "公众号": [  # the official account and the shop's messages: replies, menus, materials, mass sends, templates
        "wechat_official.view_*",
        "wechat_official.add_replyrule",
        "wechat_official.change_replyrule",
        "wechat_official.delete_replyrule",
        "wechat_official.add_menu",
        "wechat_official.change_menu",
        "wechat_official.push_menu",
        "wechat_official.add_material",
        "wechat_official.change_material",
        "wechat_official.upload_material",
        "wechat_official.add_masssend",
        "wechat_official.change_masssend",
        "wechat_official.send_mass",
        "accounts.view_subscribetemplate",
        "accounts.add_subscribetemplate",
        "accounts.change_subscribetemplate",
        "accounts.view_subscriberefusal",
        "accounts.view_smscode",
    ],
}

#: role -> the demo login of that role (development settings only: runshop --demo logins)
DEMO_LOGINS = {
    "运营": "ops",
    "客服": "service",
    "财务": "finance",
    "老师": "teacher",
    "门店店员": "store",
    "公众号": "official",
}


def _refund_limit() -> str:
    return f"¥{yuan(settings.SERVICE_REFUND_LIMIT_FEN)} 以内"


def _price_limit() -> str:
    return f"±{settings.OPS_PRICE_CHANGE_PERCENT} % 以内"


#: the actions that move money -> (label, tiers narrowest first: (permission, its limit or None)).
#: The one table behind every "who may" line of the order, refund, withdrawal and reconciliation
#: pages (:func:`role_hints`) and BACKOFFICE.md's table; the limits themselves are enforced by
#: the services (``apps.payments.staff_limits``, ``withdrawals``, ``reconciliation``).
MONEY_ACTIONS: dict[str, tuple[str, list[tuple[str, Callable[[], str] | None]]]] = {
    "price": ("改价", [(staff_limits.PRICE_LIMITED, _price_limit), (staff_limits.PRICE_ANY, None)]),
    "refund": ("同意退款", [(staff_limits.REFUND_LIMITED, _refund_limit), (staff_limits.REFUND_ANY, None)]),
    "reject_refund": ("拒绝退款", [("orders.decide_aftersale", None)]),
    "batch_refund": ("批量退款", [("payments.batch_refund", None)]),
    "withdrawal": ("审核提现", [("distribution.decide_withdrawal", None)]),
    "reconcile": ("立即对账", [("payments.run_reconciliation", None)]),
}


def who_may(key: str) -> str:
    """ "改价：运营（±10 % 以内）、财务": the roles holding each tier of ``MONEY_ACTIONS[key]``
    (read from the groups), narrowest first; a role holding a wider tier is named there only."""
    label, tiers = MONEY_ACTIONS[key]
    named: set[str] = set()
    parts: list[str] = []
    for perm, limit in reversed(tiers):
        names = [name for name in role_names(perm) if name not in named]
        named.update(names)
        parts[:0] = [f"{name}（{limit()}）" if limit else name for name in names]
    return f"{label}：{'、'.join(parts) or '管理员'}"


def role_hints(user, keys: list[str]) -> list[dict]:
    """For each of ``keys`` the user cannot do without a limit: ``{"key", "label", "text": who_may,
    "allowed": holds some tier (then the page offers it, within the limit)}``."""
    hints = []
    for key in keys:
        label, tiers = MONEY_ACTIONS[key]
        if user.has_perm(tiers[-1][0]):
            continue
        allowed = any(user.has_perm(perm) for perm, _ in tiers)
        hints.append({"key": key, "label": label, "text": who_may(key), "allowed": allowed})
    return hints


def _resolve(permission_model, spec: str) -> list:
    app_label, codename = spec.split(".", 1)
    rows = permission_model.objects.filter(content_type__app_label=app_label)
    if codename.endswith("*"):
        return list(rows.filter(codename__startswith=codename[:-1]))
    return list(rows.filter(codename=codename))


def sync_roles(group_model, permission_model) -> dict[str, int]:
    """Create the groups of :data:`ROLES` and ADD their permissions (never removes one staff
    granted by hand). Returns ``{group: permissions it holds}``. Models are passed in so a
    migration can use its historical ones."""
    out = {}
    for name, specs in ROLES.items():
        group, _ = group_model.objects.get_or_create(name=name)
        perms = [perm for spec in specs for perm in _resolve(permission_model, spec)]
        group.permissions.add(*perms)
        out[name] = group.permissions.count()
    return out


def permission_names_sync(app_config, using: str = DEFAULT_DB_ALIAS, apps=global_apps, **kwargs) -> int:
    """``post_migrate`` receiver: give every permission of ``app_config``'s models its Chinese
    name — "可以查看订单" for Django's add/change/delete/view, the ``Meta.permissions`` text for
    the named ones. Runs after ``django.contrib.auth`` created the missing rows (auth is
    installed first); updates only rows whose name differs. Returns the rows renamed."""
    if app_config.models_module is None:
        return 0
    try:
        permission_model = apps.get_model("auth", "Permission")
    except LookupError:  # a migration state without auth
        return 0
    wanted = {}  # (app_label, model_name, codename) -> name
    with translation.override(settings.LANGUAGE_CODE):
        for model in app_config.get_models():
            opts = model._meta
            for action in opts.default_permissions:
                if action in BUILTIN_VERBS:
                    wanted[(opts.app_label, opts.model_name, f"{action}_{opts.model_name}")] = (
                        f"可以{BUILTIN_VERBS[action]}{opts.verbose_name}"
                    )
            for codename, name in opts.permissions:
                wanted[(opts.app_label, opts.model_name, codename)] = str(name)
    renamed = 0
    rows = (
        permission_model.objects.using(using)
        .filter(content_type__app_label=app_config.label)
        .values_list("pk", "content_type__app_label", "content_type__model", "codename", "name")
    )
    for pk, app_label, model_name, codename, name in list(rows):
        new = wanted.get((app_label, model_name, codename))
        if new and new[:255] != name:
            renamed += permission_model.objects.using(using).filter(pk=pk).update(name=new[:255])
    return renamed


def roles_holding(permission: str) -> list[str]:
    """The roles of :data:`ROLES` that hold ``permission`` ("app_label.codename"), directly or by
    a wildcard entry ("content.add_*"); ``[]`` when none does (the 403 page names them)."""
    return [name for name, specs in ROLES.items() if any(fnmatchcase(permission, spec) for spec in specs)]
