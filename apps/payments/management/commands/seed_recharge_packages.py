from django.core.management.base import BaseCommand

from apps.payments.models import RechargePackage

PACKAGES = [(10000, 1000), (50000, 6000)]  # fen: pay 100.00 get +10.00, pay 500.00 get +60.00


class Command(BaseCommand):
    help = "Demo recharge packages (100 yuan +10, 500 yuan +60) when the shop has none."

    def handle(self, *args, **options):
        if RechargePackage.objects.exists():
            return
        RechargePackage.objects.bulk_create(
            RechargePackage(pay_fen=pay, bonus_fen=bonus, sort=i) for i, (pay, bonus) in enumerate(PACKAGES, start=1)
        )
        self.stdout.write("demo data: recharge packages 100+10, 500+60 yuan")
