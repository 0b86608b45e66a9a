"""The shop's default freight template, seeded from the flat freight it replaces.

Before freight templates there were two settings: ``FREIGHT_FEN`` (1000 fen per goods order) and
``FREE_FREIGHT_MIN_FEN`` (no freight from 9900 fen of goods). The same rule as a template: by
piece, the first piece 10.00 yuan, every further piece 0.00, free everywhere from 99.00 yuan.
Staff change it in the admin (Shipping › Freight templates).
"""

from django.db import migrations

DEFAULT = {"name": "默认运费", "mode": "piece", "first_unit": 1, "first_fee_fen": 1000,
           "extra_unit": 1, "extra_fee_fen": 0}
FREE_FROM_FEN = 9900


def seed(apps, schema_editor):
    FreightTemplate = apps.get_model("shipping", "FreightTemplate")
    FreeShippingRule = apps.get_model("shipping", "FreeShippingRule")
    if FreightTemplate.objects.filter(is_default=True).exists():
        return
    template = FreightTemplate.objects.create(is_default=True, **DEFAULT)
    FreeShippingRule.objects.create(template=template, provinces=[], cities=[], min_amount_fen=FREE_FROM_FEN)


class Migration(migrations.Migration):
    dependencies = [("shipping", "0001_freight_templates")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
