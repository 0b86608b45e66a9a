import datetime as dt

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.utils import timezone

from apps.accounts.models import Coupon, Customer
from apps.catalog.management.commands.seed_demo import DEMO_OPENID
from apps.catalog.models import Category
from apps.marketing import coupons
from apps.marketing.models import CouponTemplate, SignInRule

SIGN_IN_POINTS = [5, 5, 10, 10, 15, 15, 30]  # day 1..7 of a streak, then the cycle starts again


class Command(BaseCommand):
    help = (
        "Demo coupon templates (an amount off with a threshold, a percent off with a cap, one for a "
        "category), the sign-in table, and a coupon the demo customer received; each only when "
        "the shop has none of it."
    )

    def handle(self, *args, **options):
        now = timezone.now()
        if not CouponTemplate.objects.exists():
            newcomer = CouponTemplate.objects.create(
                name="新人满100减20",
                kind="amount",
                amount_fen=2000,
                threshold_fen=10000,
                valid_days=30,
                total=1000,
                per_customer=1,
            )
            CouponTemplate.objects.create(
                name="满200享9折 最高减30元",
                kind="percent",
                percent=10,
                max_discount_fen=3000,
                threshold_fen=20000,
                valid_days=15,
                total=500,
                per_customer=2,
            )
            incense = Category.objects.filter(name="香道").first()
            if incense is not None:
                scoped = CouponTemplate.objects.create(
                    name="香道满150减30",
                    kind="amount",
                    amount_fen=3000,
                    threshold_fen=15000,
                    scope="category",
                    valid_from=now,
                    valid_to=now + dt.timedelta(days=60),
                    total=200,
                    per_customer=1,
                )
                scoped.categories.set([incense])
            self.stdout.write(f"demo data: {CouponTemplate.objects.count()} coupon templates")
            customer = Customer.objects.filter(openid=DEMO_OPENID).first()
            if customer is not None and not Coupon.objects.filter(customer=customer, template__isnull=False).exists():
                coupon = coupons.coupon_receive(template_id=newcomer.pk, customer_id=customer.pk)
                self.stdout.write(f"demo data: the demo customer received coupon {coupon.pk} ({coupon.title})")
        self._given_templates()
        if not SignInRule.objects.exists():
            SignInRule.objects.bulk_create(
                SignInRule(day=day, points=points) for day, points in enumerate(SIGN_IN_POINTS, start=1)
            )
            self.stdout.write("demo data: sign-in rules " + ", ".join(map(str, SIGN_IN_POINTS)))
        call_command("seed_group_buys")  # a live 2-person 拼团 and a live 砍价 (API.md growth demo data)

    def _given_templates(self) -> None:
        """A new-customer and a birthday template (apps.marketing.gifts), when there is none."""
        if CouponTemplate.objects.filter(occasion=CouponTemplate.Occasion.NEW_CUSTOMER).exists():
            return
        CouponTemplate.objects.create(  # given once at a customer's first login (apps.marketing.gifts)
            name="新人礼 满30减10",
            kind="amount",
            amount_fen=1000,
            threshold_fen=3000,
            valid_days=14,
            total=10000,
            occasion=CouponTemplate.Occasion.NEW_CUSTOMER,
        )
        CouponTemplate.objects.create(  # given on the customer's birthday, once a year
            name="生日礼 9折券",
            kind="percent",
            percent=10,
            max_discount_fen=5000,
            valid_days=7,
            total=10000,
            occasion=CouponTemplate.Occasion.BIRTHDAY,
        )
        self.stdout.write("demo data: a new-customer and a birthday coupon template")
