"""History: recharges, their bonus and daily sign-ins are ledger rows with reasons,
and random sequences of sign-in, recharge paid (duplicates included), balance pay, refund to the
balance, points spent and returned by a cancel keep the stored totals equal to the ledger sums."""

import datetime as dt
import random
from zoneinfo import ZoneInfo

import pytest
from django.db.models import Sum
from django.utils import timezone
from ledger_helpers import assert_ledger_matches

from apps.accounts.models import Address, Customer, WalletEvent
from apps.marketing import signin
from apps.marketing.models import SignInRule
from apps.orders import followups
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import AfterSale, FollowUp, Order
from apps.payments import balance, order_lifecycle, recharges, refunds
from apps.payments.models import Recharge, Refund

pytestmark = pytest.mark.django_db

SHANGHAI = ZoneInfo("Asia/Shanghai")


@pytest.mark.parametrize("seed", [11, 12, 13, 14])
def test_random_history_keeps_totals_equal_to_ledger_sums(make_customer, make_sku, settings, seed):
    settings.MAX_UNPAID_ORDERS = 50
    rnd = random.Random(seed)
    for day, points in enumerate([5, 10, 20], start=1):
        SignInRule.objects.create(day=day, points=points)
    customer = make_customer()
    Address.objects.create(
        customer=customer,
        name="张三",
        phone="13800000000",
        province="浙江省",
        city="杭州市",
        detail="文三路100号",
        is_default=True,
    )
    sku = make_sku(price_fen=6000, stock=1000)
    start = dt.datetime(2026, 12, 1, 9, tzinfo=SHANGHAI)
    expected = {"recharge": 0, "bonus": 0, "sign_in": 0}

    def sign_in():
        result = signin.sign_in(customer_id=customer.pk, now=start + dt.timedelta(days=rnd.randint(0, 20)))
        expected["sign_in"] += 0 if result.already else result.points

    def recharge():
        pay_fen, bonus_fen = rnd.choice([(10000, 1000), (50000, 6000), (100, 0)])
        row = Recharge.objects.create(
            recharge_no=f"R{rnd.getrandbits(64):022d}"[:23],
            customer=customer,
            pay_fen=pay_fen,
            bonus_fen=bonus_fen,
            expires_at=timezone.now(),
        )
        for _ in range(rnd.randint(1, 3)):  # WeChat's duplicates
            recharges.recharge_apply_paid(recharge=row, transaction_id=f"42{row.pk:030d}", paid_at=timezone.now())
        expected["recharge"] += pay_fen
        expected["bonus"] += bonus_fen

    def create():
        fresh = Customer.objects.get(pk=customer.pk)
        use = rnd.choice([0, min(fresh.points, rnd.randint(1, 50))])
        draft = order_confirm(customer=fresh, use_points=use, items=[{"sku_id": sku.pk, "quantity": rnd.randint(1, 2)}])
        order_create(customer=fresh, order_key=draft["order_key"])

    def pick(status):
        rows = list(Order.objects.filter(customer=customer, status=status))
        return rnd.choice(rows) if rows else None

    def pay():
        order = pick("unpaid")
        if order and Customer.objects.get(pk=customer.pk).balance_fen >= order.pay_fen:
            balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
            for row in FollowUp.objects.filter(order=order, status="pending", kind="points_award"):
                followups.followup_execute(row.pk)

    def cancel():
        if order := pick("unpaid"):
            order_lifecycle.order_cancel(order=order, actor="customer", reason="random")

    def refund():
        if order := pick("paid"):
            sale = refunds.refund_request(order_no=order.order_no, customer_id=customer.pk, reason="random")
            if sale.status == AfterSale.Status.REQUESTED:
                refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:t")
            for row in Refund.objects.filter(order=order, status="pending"):
                refunds.refund_execute(refund_id=row.pk)

    steps = [sign_in, sign_in, recharge, create, create, pay, pay, cancel, refund]
    for _ in range(50):
        rnd.choice(steps)()
        assert_ledger_matches(customer.pk)
    rows = WalletEvent.objects.filter(customer=customer)
    for reason, amount in expected.items():
        assert (rows.filter(reason=reason).aggregate(s=Sum("amount"))["s"] or 0) == amount
    # one ledger row per recharge and reason, whatever the duplicates
    assert rows.filter(reason="recharge").count() == Recharge.objects.filter(customer=customer).count()
    assert rows.filter(reason="bonus").count() == Recharge.objects.filter(customer=customer, bonus_fen__gt=0).count()
