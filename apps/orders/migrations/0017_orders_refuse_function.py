"""``orders_refuse(reason)``: the PostgreSQL function that aborts a statement on purpose.

The one-round-trip create (``apps.orders.flash_create``) sends BEGIN, its statements and COMMIT
together; its last statement calls this when a conditional step took no row (stock, the 秒杀's
allowance or window, the caps), so the transaction rolls back instead of committing a partial
order. SQLite has no such functions and does not use that path.
"""

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
        schema_editor.execute(CREATE, params=None)  # its "%" is PL/pgSQL's, not a placeholder


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("orders", "0016_order_workbench_remark_price_change")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
