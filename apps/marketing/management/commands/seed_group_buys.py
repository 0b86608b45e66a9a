import datetime as dt

from django.core.management.base import BaseCommand
from django.utils import timezone

from apps.catalog.models import Sku
from apps.marketing import bargains, group_buys, selectors

# (SKU code of fixtures/demo.json, title, price in fen, stock, group size, hours, limit per customer)
GROUP_BUY = ("SM-004-009", "公道杯·两人拼团", 4800, 30, 2, 24, 2)
# (SKU code, title, original fen, floor fen, helpers needed, hours, stock, limit per customer)
BARGAIN = ("SM-005-011", "沉香线香·好友砍价", 5900, 1900, 3, 24, 30, 1)
LASTS = dt.timedelta(days=60)


class Command(BaseCommand):
    help = (
        "Demo 拼团 (a live 2-person activity) and 砍价 (a live campaign) on goods SKUs with stock, each "
        "only when the shop has no live one of that kind and the demo SKU exists (safe to run twice)."
    )

    def handle(self, *args, **options):
        now = timezone.localtime().replace(second=0, microsecond=0)
        code, title, price_fen, stock, size, hours, limit = GROUP_BUY
        sku = Sku.objects.filter(code=code, is_active=True).first()
        if not selectors.group_buy_list(status="live").exists() and sku is not None and sku.stock >= stock:
            activity = group_buys.group_buy_schedule(
                title=title,
                sku_id=sku.pk,
                price_fen=price_fen,
                stock=stock,
                group_size=size,
                hours=hours,
                starts_at=now,
                ends_at=now + LASTS,
                limit_per_customer=limit,
            )
            self.stdout.write(f"demo data: live group buy {activity.pk} ({title})")
        code, title, original_fen, floor_fen, helpers, hours, stock, limit = BARGAIN
        sku = Sku.objects.filter(code=code, is_active=True).first()
        if not bargains.bargain_list(status="live").exists() and sku is not None and sku.stock >= stock:
            campaign = bargains.bargain_schedule(
                title=title,
                sku_id=sku.pk,
                original_price_fen=original_fen,
                floor_price_fen=floor_fen,
                helpers_needed=helpers,
                hours=hours,
                starts_at=now,
                ends_at=now + LASTS,
                stock=stock,
                limit_per_customer=limit,
            )
            self.stdout.write(f"demo data: live bargain {campaign.pk} ({title})")
