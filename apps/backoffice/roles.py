"""The shop's staff roles as Django groups, with the named permissions of issue 7.

``sync_roles`` is idempotent: the data migration ``0002_roles`` calls it, and so does
``make run`` (``runshop``), so permissions that appear later (e.g. the chat app's) are added to
the roles that read them. A permission that does not exist (yet) is skipped, never an error.
Each entry is "app_label.codename", or "app_label.view_*" for every view permission of an app.
"""

from __future__ import annotations

#: group name -> permissions ("app.codename" or "app.view_*")
ROLES: dict[str, list[str]] = {
    "运营": [  # operations: catalog, stock, shipping, flash sales, orders to look at
        "catalog.view_*", "catalog.add_product", "catalog.change_product", "catalog.add_sku", "catalog.change_sku",
        "catalog.change_stock", "catalog.add_category", "catalog.change_category",
        "orders.view_order", "orders.view_orderevent", "orders.view_aftersale", "orders.ship_order", "orders.complete_order",
        "marketing.view_*", "marketing.add_flashsale", "marketing.change_flashsale", "marketing.manage_flashsale",
        "backoffice.view_dashboard",
    ],
    "客服": [  # customer service: orders, after-sale requests, reading chats
        "orders.view_order", "orders.view_orderline", "orders.view_orderevent", "orders.view_aftersale",
        "orders.view_followup", "accounts.view_customer", "accounts.view_address", "payments.view_refund",
        "chat.view_*", "alerts.view_*",
    ],
    "财务": [  # finance: refund approval, manual payments, reconciliation, exports
        "orders.view_order", "orders.view_orderevent", "orders.view_aftersale", "orders.decide_aftersale",
        "payments.view_*", "payments.resolve_payment", "payments.retry_refund", "payments.run_reconciliation",
        "payments.batch_refund",
        "backoffice.export_data", "backoffice.view_dashboard", "alerts.view_*", "alerts.resolve_alert",
    ],
    "老师": [  # a teacher: own schedule and chats (querysets are limited to the linked teacher)
        "appointments.view_slot", "appointments.change_slot", "appointments.manage_slot", "appointments.view_booking",
        "chat.view_*", "chat.add_message",
    ],
}

#: role -> the demo login of that role (development settings only: runshop --demo logins)
DEMO_LOGINS = {"运营": "ops", "客服": "service", "财务": "finance", "老师": "teacher"}


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
