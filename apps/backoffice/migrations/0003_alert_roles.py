"""Data migration: the roles get the alerts' permissions (客服 looks, 财务 also marks handled),
as 0002_roles gave them the permissions that existed then (apps/backoffice/roles.py)."""

import importlib

from django.db import migrations

_roles = importlib.import_module("apps.backoffice.migrations.0002_roles")


class Migration(migrations.Migration):
    dependencies = [
        ("backoffice", "0002_roles"),
        ("alerts", "0001_alerts"),
    ]

    operations = [migrations.RunPython(_roles.create_roles, migrations.RunPython.noop)]
