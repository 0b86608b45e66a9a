"""``manage.py flash_sale_create --sku SKU_ID --price-fen P --stock N --limit L --starts-at ISO
--ends-at ISO --title TEXT [--by USERNAME]``: schedules a 秒杀 through the back office's service
(``flash_sales.flash_sale_schedule``, the same rules). Times are ISO 8601; one without an offset
is Beijing time. With ``--by`` the user needs ``marketing.manage_flashsale``, as in the admin.
Prints one line starting with the new sale's id; exits non-zero with the reason when refused."""

import datetime as dt

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from apps.marketing import flash_sales
from starmall.errors import ShopError

MANAGE = "marketing.manage_flashsale"


def _when(value: str, name: str) -> dt.datetime:
    """An aware datetime from ISO 8601; naive values are Asia/Shanghai (TIME_ZONE)."""
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError as exc:
        raise CommandError(
            f"--{name} must be an ISO 8601 time such as 2026-12-12T10:00:00+08:00, not {value!r}"
        ) from exc
    return timezone.make_aware(moment) if timezone.is_naive(moment) else moment


class Command(BaseCommand):
    help = "创建秒杀活动（与后台相同的服务和校验）：打印以新活动 id 开头的一行。"

    def add_arguments(self, parser):
        parser.add_argument("--sku", type=int, required=True, help="the goods SKU's id")
        parser.add_argument("--price-fen", type=int, required=True, help="the 秒杀 price in fen")
        parser.add_argument("--stock", type=int, required=True, help="units for the sale (at most the SKU's stock)")
        parser.add_argument("--limit", type=int, default=1, help="units one customer may buy (default 1)")
        parser.add_argument("--starts-at", required=True, help="ISO 8601; Beijing time when no offset")
        parser.add_argument("--ends-at", required=True, help="ISO 8601; at most 31 days after the start")
        parser.add_argument("--title", required=True)
        parser.add_argument("--by", default="", help=f"staff username holding {MANAGE} (optional)")

    def handle(self, *args, sku, price_fen, stock, limit, starts_at, ends_at, title, by, **options):
        if by:
            user = get_user_model().objects.filter(username=by, is_active=True).first()
            if user is None:
                raise CommandError(f"refused: no active staff user {by!r}")
            if not user.has_perm(MANAGE):
                raise CommandError(f"refused: {by} lacks {MANAGE} (没有管理秒杀的权限)")
        try:
            sale = flash_sales.flash_sale_schedule(
                title=title,
                sku_id=sku,
                price_fen=price_fen,
                stock=stock,
                starts_at=_when(starts_at, "starts-at"),
                ends_at=_when(ends_at, "ends-at"),
                limit_per_customer=limit,
            )
        except ShopError as exc:
            problems = "; ".join(f"{field}: {'，'.join(texts)}" for field, texts in (exc.detail or {}).items())
            raise CommandError(f"refused: {exc.message} {problems}".strip()) from exc
        start = timezone.localtime(sale.starts_at).isoformat()
        end = timezone.localtime(sale.ends_at).isoformat()
        self.stdout.write(
            f"{sale.pk} 秒杀 scheduled: {sale.title!r} SKU {sku} at {sale.price_fen} fen, {sale.stock} units, "
            f"limit {sale.limit_per_customer}, {start} – {end}"
        )
