"""Data migration: customer service (客服) and teachers (老师) get
``appointments.mark_attendance`` (attended / no_show / teacher_absent), by the same idempotent
``sync_roles`` as ``0002_roles``."""

import importlib

from django.db import migrations

_roles = importlib.import_module("apps.backoffice.migrations.0002_roles")


class Migration(migrations.Migration):
    dependencies = [
        ("backoffice", "0007_money_limit_roles"),
        ("appointments", "0011_booking_mark_attendance"),
    ]

    operations = [migrations.RunPython(_roles.create_roles, migrations.RunPython.noop)]
