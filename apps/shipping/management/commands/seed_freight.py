from django.apps import apps
from django.core.management.base import BaseCommand
from django.db import transaction

from apps.shipping.models import FreeShippingRule, FreightRegionRule, FreightTemplate
from apps.shipping.regions import PROVINCE_NAMES

REMOTE = ["新疆维吾尔自治区", "西藏自治区"]
NEAR = ["浙江省", "江苏省", "上海市"]
# Heavy goods of fixtures/demo.json: (SKU code, grams per unit)
HEAVY_SKUS = [("SM-010-021", 1800), ("SM-010-022", 3200), ("SM-007-015", 1200), ("SM-007-016", 2100)]


class Command(BaseCommand):
    help = (
        "Demo freight templates: the default (migrated) one charges more for 新疆/西藏 and ships free "
        "from 99.00 yuan elsewhere (299.00 there); a weight-based one for the ink stones and incense "
        "burners. Only into a shop without region rules."
    )

    @transaction.atomic
    def handle(self, *args, **options):
        # seed_demo calls this by name; the demo products are reached by model name too, so that
        # shipping imports neither catalog nor orders (orders asks shipping, never the reverse).
        Product, Sku = apps.get_model("catalog", "Product"), apps.get_model("catalog", "Sku")
        if FreightRegionRule.objects.exists():
            self.stdout.write("demo data: freight templates already set up, nothing changed")
            return
        default = FreightTemplate.objects.filter(is_default=True).first()
        if default is None:
            default = FreightTemplate.objects.create(
                name="默认运费",
                mode="piece",
                first_unit=1,
                first_fee_fen=1000,
                extra_unit=1,
                extra_fee_fen=0,
                is_default=True,
            )
        FreightRegionRule.objects.create(template=default, provinces=REMOTE, first_fee_fen=2500, extra_fee_fen=500)
        default.free_rules.all().delete()
        FreeShippingRule.objects.create(
            template=default, provinces=[p for p in PROVINCE_NAMES if p not in REMOTE], min_amount_fen=9900
        )
        FreeShippingRule.objects.create(template=default, provinces=REMOTE, min_amount_fen=29900)

        heavy = FreightTemplate.objects.create(
            name="重货（按重量）", mode="weight", first_unit=1000, first_fee_fen=1200, extra_unit=500, extra_fee_fen=300
        )
        FreightRegionRule.objects.create(template=heavy, provinces=REMOTE, first_fee_fen=3000, extra_fee_fen=1000)
        FreightRegionRule.objects.create(
            template=heavy, provinces=["浙江省"], cities=["杭州市"], first_fee_fen=800, extra_fee_fen=200
        )  # the warehouse's own city
        FreeShippingRule.objects.create(template=heavy, provinces=NEAR, min_amount_fen=50000)
        for code, grams in HEAVY_SKUS:
            Sku.objects.filter(code=code).update(weight_g=grams)
        products = Product.objects.filter(skus__code__in=[code for code, _ in HEAVY_SKUS]).distinct()
        Product.objects.filter(pk__in=products.values("pk")).update(freight_template=heavy)
        self.stdout.write(f"demo data: freight templates '{default.name}' (新疆/西藏 dearer) and '{heavy.name}'")
