"""Data migration: operations (运营) ship orders, so they see the order's lines (what to pack)
and its shipments; the roles are synced as 0002_roles made them (apps/backoffice/roles.py)."""

import importlib

from django.db import migrations

_roles = importlib.import_module("apps.backoffice.migrations.0002_roles")


class Migration(migrations.Migration):
    dependencies = [("backoffice", "0004_merge_alert_and_batch_refund_roles")]

    operations = [migrations.RunPython(_roles.create_roles, migrations.RunPython.noop)]
