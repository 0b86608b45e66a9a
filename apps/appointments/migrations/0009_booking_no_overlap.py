"""PostgreSQL refuses two live bookings of a teacher whose ``[start, blocked_until)`` overlap.

An exclusion constraint (btree_gist for the teacher's ``=``, ``&&`` over a tstzrange) WHERE
live. Only on PostgreSQL: SQLite has neither, and there ``apps.appointments.bookings``
serialises the check and the insert behind the teacher's rules row (the write lock).
"""

from django.db import migrations

SQL_UP = """
CREATE EXTENSION IF NOT EXISTS btree_gist;
ALTER TABLE appointments_booking ADD CONSTRAINT booking_no_overlap
    EXCLUDE USING gist (teacher_id WITH =, tstzrange("start", blocked_until, '[)') WITH &&)
    WHERE (live);
"""
SQL_DOWN = "ALTER TABLE appointments_booking DROP CONSTRAINT IF EXISTS booking_no_overlap;"


class OnPostgres(migrations.RunSQL):
    """RunSQL that does nothing on other databases (the SQLite suite migrates too)."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)


class Migration(migrations.Migration):
    dependencies = [
        ("appointments", "0008_booking_ranges_required"),
    ]

    operations = [OnPostgres(SQL_UP, SQL_DOWN)]
