from django.core.management.base import BaseCommand

from apps.catalog.models import Kind, Sku
from apps.marketing.models import CouponTemplate
from apps.points_mall.models import Item


class Command(BaseCommand):
    help = (
        "Demo points mall (API.md Members): a coupon item (5 yuan off for 100 points, its own "
        "points-mall template) and a goods item (the first goods SKU in stock, for 300 points); "
        "only when the mall has no items."
    )

    def handle(self, *args, **options):
        if Item.objects.exists():
            self.stdout.write("demo data: points mall not empty, nothing added")
            return
        template = CouponTemplate.objects.create(
            name="积分兑换 满50减5",
            kind="amount",
            amount_fen=500,
            threshold_fen=5000,
            valid_days=30,
            total=1000,
            per_customer=1,
            occasion=CouponTemplate.Occasion.POINTS_MALL,
        )
        Item.objects.create(
            name="满50减5元券",
            kind=Item.Kind.COUPON,
            coupon_template=template,
            points=100,
            stock=500,
            limit_per_customer=3,
        )
        sku = Sku.objects.filter(product__kind=Kind.GOODS, product__is_active=True, stock__gte=5).order_by("pk").first()
        if sku is not None:
            Item.objects.create(
                name=f"{sku.product.name}（积分兑换）",
                kind=Item.Kind.GOODS,
                sku=sku,
                points=300,
                stock=5,
                limit_per_customer=1,
                sort=1,
            )
        self.stdout.write(f"demo data: {Item.objects.count()} points-mall items")
