"""The receiver's name and phone as stored generated columns of the address snapshot, indexed for
the back office's order search (a stored column: adding it rewrites the table once)."""

import django.db.models.fields.json
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("orders", "0019_followup_kind_shipping_info"),
    ]

    operations = [
        migrations.AddField(
            model_name="order",
            name="receiver_name",
            field=models.GeneratedField(
                db_persist=True,
                expression=django.db.models.fields.json.KeyTextTransform("name", "address"),
                output_field=models.TextField(),
                verbose_name="收货人",
            ),
        ),
        migrations.AddField(
            model_name="order",
            name="receiver_phone",
            field=models.GeneratedField(
                db_persist=True,
                expression=django.db.models.fields.json.KeyTextTransform("phone", "address"),
                output_field=models.TextField(),
                verbose_name="收货人电话",
            ),
        ),
        migrations.AddIndex(
            model_name="order",
            index=models.Index(fields=["receiver_phone"], name="order_receiver_phone_idx"),
        ),
        migrations.AddIndex(
            model_name="order",
            index=models.Index(
                fields=["receiver_name"], name="order_receiver_name_idx", opclasses=["text_pattern_ops"]
            ),
        ),
    ]
