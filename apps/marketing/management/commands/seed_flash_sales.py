import datetime as dt

from django.core.management.base import BaseCommand
from django.utils import timezone

from apps.catalog.models import Sku
from apps.marketing import flash_sales, selectors

# (SKU code of fixtures/demo.json, title, sale price in fen, stock, limit per customer)
LIVE = ("SM-001-001", "青瓷盖碗·天青 限时秒杀", 6800, 10, 2)
UPCOMING = ("SM-003-007", "建盏·油滴天目 明晚八点秒杀", 16800, 5, 1)


class Command(BaseCommand):
    help = (
        "Demo flash sales (秒杀): one live now (12 hours) and one upcoming (tomorrow 20:00-22:00 "
        "Shanghai time), each only if the shop has none of that kind and the demo SKU exists."
    )

    def handle(self, *args, **options):
        now = timezone.localtime()
        tomorrow_20 = (now + dt.timedelta(days=1)).replace(hour=20, minute=0, second=0, microsecond=0)
        plans = [
            ("live", LIVE, now.replace(second=0, microsecond=0), now + dt.timedelta(hours=12)),
            ("upcoming", UPCOMING, tomorrow_20, tomorrow_20 + dt.timedelta(hours=2)),
        ]
        for status, (code, title, price_fen, stock, limit), starts_at, ends_at in plans:
            if selectors.flash_sale_list(status=status, now=now).exists():
                continue
            sku = Sku.objects.filter(code=code).first()
            if sku is None or sku.stock < stock:
                continue
            sale = flash_sales.flash_sale_schedule(
                title=title,
                sku_id=sku.pk,
                price_fen=price_fen,
                stock=stock,
                starts_at=starts_at,
                ends_at=ends_at,
                limit_per_customer=limit,
            )
            self.stdout.write(f"demo data: {status} flash sale {sale.pk} ({title})")
