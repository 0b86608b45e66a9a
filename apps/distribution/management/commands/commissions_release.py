"""``manage.py commissions_release``: make due commissions available now (what beat runs)."""

from django.core.management.base import BaseCommand

from apps.distribution import commissions


class Command(BaseCommand):
    help = "把已到期（订单完成满 COMMISSION_FREEZE_DAYS 天）的冻结佣金转为可提现。"

    def handle(self, *args, **options):
        released = commissions.commissions_release_due()
        self.stdout.write(f"released {released} commissions (已解冻 {released} 笔佣金)")
