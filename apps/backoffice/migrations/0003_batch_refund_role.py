"""Data migration: the finance role (财务) gets ``payments.batch_refund`` (batch refunds), by the
same idempotent ``sync_roles`` as ``0002_roles``."""

import importlib

from django.db import migrations

_roles = importlib.import_module("apps.backoffice.migrations.0002_roles")


class Migration(migrations.Migration):
    dependencies = [
        ("backoffice", "0002_roles"),
        ("payments", "0009_refund_batches"),
    ]

    operations = [migrations.RunPython(_roles.create_roles, migrations.RunPython.noop)]
