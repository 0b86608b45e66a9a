"""Data migration: customer service (客服) and teachers (老师) may look at waitlist entries
(``appointments.view_waitlistentry``), by the same idempotent ``sync_roles`` as ``0002_roles``."""

import importlib

from django.db import migrations

_roles = importlib.import_module("apps.backoffice.migrations.0002_roles")


class Migration(migrations.Migration):
    dependencies = [
        ("backoffice", "0008_attendance_roles"),
        ("appointments", "0010_waitlist_calendar_feed"),
    ]

    operations = [migrations.RunPython(_roles.create_roles, migrations.RunPython.noop)]
