"""Demo distribution data (API.md: commission rates 10 % / 5 %): the rates row, a demo channel
code and the demo customer's referral code. Idempotent: safe to run twice."""

from django.core.management.base import BaseCommand

from apps.accounts.models import Customer
from apps.distribution import referral
from apps.distribution.models import Channel, CommissionSettings

DEMO_OPENID = "oDemoCustomer0000000000000001"  # fixtures/demo.json


class Command(BaseCommand):
    help = "Demo distribution: commission rates 10%/5%, channel DEMO (演示渠道), the demo customer's referral code."

    def handle(self, *args, **options):
        _, made = CommissionSettings.objects.get_or_create(
            pk=1, defaults={"level1_rate_bp": 1000, "level2_rate_bp": 500}
        )
        Channel.objects.get_or_create(code="DEMO", defaults={"name": "演示渠道"})
        demo = Customer.objects.filter(openid=DEMO_OPENID).values_list("pk", flat=True).first()
        code = referral.distributor_for(customer_id=demo).referral_code if demo else "-"
        rates = CommissionSettings.objects.get(pk=1)
        self.stdout.write(
            f"demo distribution: rates {rates}{' (new)' if made else ''}, channel DEMO, "
            f"demo customer's referral code {code}"
        )
