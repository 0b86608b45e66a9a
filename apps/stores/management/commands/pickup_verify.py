from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from apps.stores.services import pickup_verify
from starmall.errors import ShopError


class Command(BaseCommand):
    help = (
        "Verify a pickup code (自提核销) as staff USERNAME, exactly as the back office's page does "
        "(same permission and store checks, same PICKUP_VERIFY_FAILURES_PER_HOUR cap of wrong codes); "
        "exits non-zero with the reason in one line when refused."
    )

    def add_arguments(self, parser):
        parser.add_argument("code", help="the customer's 8-digit pickup code")
        parser.add_argument("--by", required=True, help="the staff username verifying (must work at the order's store)")

    def handle(self, *args, code, by, **options):
        user = get_user_model().objects.filter(username=by).first()
        if user is None:
            raise CommandError(f"没有员工账号 {by}")
        try:
            order = pickup_verify(code=code, user=user)
        except ShopError as exc:
            raise CommandError(exc.message) from exc
        when = timezone.localtime(order.pickup_verified_at).strftime("%Y-%m-%d %H:%M")
        self.stdout.write(
            f"已核销 订单 {order.order_no}（{(order.pickup_store or {}).get('name', '')}）"
            f" 于 {when} 由 {user.get_username()}"
        )
