"""Drop ``orders_refuse(reason)``: every create runs through ``apps.orders.create`` now, whose
refusals are Python's, so no statement aborts itself any more."""

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION orders_refuse(reason text) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'orders_refuse: %', reason USING ERRCODE = 'P0001';
END
$$
"""
DROP = "DROP FUNCTION IF EXISTS orders_refuse(text)"



def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


class Migration(migrations.Migration):
    dependencies = [("orders", "0017_orders_refuse_function")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
