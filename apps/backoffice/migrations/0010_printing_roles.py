"""Data migration: operations (运营) manage the receipt printers and both roles that handle orders
(运营, 客服) print tickets and see the print jobs (``printing.print_order``; a waybill also needs
``orders.ship_order``, operations'), by the same idempotent ``sync_roles`` as ``0002_roles``."""

import importlib

from django.db import migrations

_roles = importlib.import_module("apps.backoffice.migrations.0002_roles")


class Migration(migrations.Migration):
    dependencies = [
        ("backoffice", "0009_waitlist_roles"),
        ("printing", "0001_initial"),
    ]

    operations = [migrations.RunPython(_roles.create_roles, migrations.RunPython.noop)]
