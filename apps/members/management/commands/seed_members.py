from django.core.management.base import BaseCommand
from django.db import transaction

from apps.catalog.models import Kind, Sku
from apps.members.models import Level, MemberCard

LEVELS = [("普通会员", 0, 100), ("银卡", 1000, 98), ("金卡", 5000, 95)]  # name, growth_min, discount_percent
CARD = ("月卡", 30, 1990, 2990)  # name, days, pay_fen, original_fen
MEMBER_PRICE_PERCENT = 90  # the demo member price: 90 % of the SKU's price


class Command(BaseCommand):
    help = (
        "Demo members data (API.md Members): levels 普通会员 (0, 100), 银卡 (1,000, 98), 金卡 (5,000, 95), "
        "a 30-day member card, and a member price on one goods SKU; each only when the shop has none."
    )

    @transaction.atomic
    def handle(self, *args, **options):
        if not Level.objects.exists():
            Level.objects.bulk_create(
                Level(name=name, growth_min=growth_min, discount_percent=percent)
                for name, growth_min, percent in LEVELS
            )
        if not MemberCard.objects.exists():
            name, days, pay_fen, original_fen = CARD
            MemberCard.objects.create(name=name, days=days, pay_fen=pay_fen, original_fen=original_fen, sort=1)
        if not Sku.objects.filter(member_price_fen__isnull=False).exists():
            sku = (
                Sku.objects.filter(product__kind=Kind.GOODS, is_active=True, price_fen__gte=100).order_by("id").first()
            )
            if sku is not None:
                Sku.objects.filter(pk=sku.pk).update(member_price_fen=sku.price_fen * MEMBER_PRICE_PERCENT // 100)
        self.stdout.write("demo data: member levels 普通会员/银卡/金卡, a 30-day member card, a member price")
