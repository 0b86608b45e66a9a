"""Data migration: customer service (客服) get ``orders.approve_small_refund`` (refunds up to
SERVICE_REFUND_LIMIT_FEN) and operations (运营) ``orders.change_price_limited`` (改价 within
OPS_PRICE_CHANGE_PERCENT), by the same idempotent ``sync_roles`` as ``0002_roles``."""

import importlib

from django.db import migrations

_roles = importlib.import_module("apps.backoffice.migrations.0002_roles")


class Migration(migrations.Migration):
    dependencies = [
        ("backoffice", "0006_revenue_permission_and_workbench_roles"),
        ("orders", "0021_limited_refund_and_price_permissions"),
    ]

    operations = [migrations.RunPython(_roles.create_roles, migrations.RunPython.noop)]
