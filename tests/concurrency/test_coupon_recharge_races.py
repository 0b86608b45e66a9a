"""Coupon, recharge and sign-in races on PostgreSQL with real threads: coupon totals and per-customer limits, single
use of a coupon, recharge notifications delivered at once, sign-in twice at the same moment."""

from collections import Counter

import pytest

from apps.accounts.models import Address, Coupon, Customer, WalletEvent
from apps.marketing import coupons, signin
from apps.marketing.exceptions import CouponLimitExceeded
from apps.marketing.models import CouponReceipt, CouponTemplate, SignIn, SignInRule
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.exceptions import CouponUnavailable
from apps.orders.models import Order
from apps.payments import notifications, recharges
from apps.payments.models import Notification, Recharge, RechargePackage

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N = 8


def _template(**terms) -> CouponTemplate:
    values = {
        "name": "满100减20",
        "kind": "amount",
        "amount_fen": 2000,
        "total": 100,
        "per_customer": 1,
        "valid_days": 30,
        **terms,
    }
    return CouponTemplate.objects.create(**values)


def test_many_customers_race_for_the_last_coupons(make_customer, race):
    template = _template(total=3)
    customers = [make_customer() for _ in range(N)]

    results = race(lambda i: coupons.coupon_receive(template_id=template.pk, customer_id=customers[i].pk), N)

    assert sum(isinstance(r, Coupon) for r in results) == 3, results
    assert sum(isinstance(r, CouponLimitExceeded) for r in results) == N - 3, results
    template.refresh_from_db()
    assert (template.issued, template.remaining) == (3, 0)
    assert Coupon.objects.filter(template=template).count() == 3
    assert CouponReceipt.objects.filter(template=template).count() == 3  # losers' receipts rolled back


def test_one_customer_racing_gets_at_most_the_per_customer_limit(make_customer, race):
    template = _template(total=100, per_customer=2)
    customer = make_customer()

    results = race(lambda i: coupons.coupon_receive(template_id=template.pk, customer_id=customer.pk), N)

    assert sum(isinstance(r, Coupon) for r in results) == 2, results
    assert all(isinstance(r, (Coupon, CouponLimitExceeded)) for r in results), results
    assert Coupon.objects.filter(customer=customer).count() == 2
    assert CouponReceipt.objects.get(template=template, customer=customer).count == 2
    template.refresh_from_db()
    assert template.issued == 2


def test_one_coupon_raced_by_several_orders_is_used_once(make_customer, make_sku, race):
    sku = make_sku(price_fen=12800, stock=50)
    customer = make_customer()
    Address.objects.create(
        customer=customer,
        name="买家",
        phone="13800000000",
        province="浙江省",
        city="杭州市",
        detail="1号",
        is_default=True,
    )
    coupon = coupons.coupon_receive(template_id=_template(threshold_fen=10000).pk, customer_id=customer.pk)
    keys = [
        order_confirm(customer=customer, coupon_id=coupon.pk, items=[{"sku_id": sku.pk, "quantity": 1}])["order_key"]
        for _ in range(3)
    ]

    results = race(lambda i: order_create(customer=Customer.objects.get(pk=customer.pk), order_key=keys[i])[0], 3)

    assert sum(isinstance(r, Order) for r in results) == 1, results
    assert sum(isinstance(r, CouponUnavailable) for r in results) == 2, results
    assert Coupon.objects.get(pk=coupon.pk).status == "used"
    assert Order.objects.filter(coupon=coupon).count() == 1
    assert sku.__class__.objects.get(pk=sku.pk).stock == 49  # the losers took nothing


def test_recharge_notification_delivered_concurrently_credits_once(make_customer, wechat, race):
    customer = make_customer()
    package = RechargePackage.objects.create(pay_fen=50000, bonus_fen=6000)
    recharge, _ = recharges.recharge_create(customer=customer, package_id=package.pk)
    wechat.control.pay(recharge.recharge_no)
    body = wechat.control.notifications()[0]["body"].encode()

    results = race(lambda i: notifications.payment_notification_handle(body), N)

    assert all(b"SUCCESS" in r for r in results), results
    assert Counter(Notification.objects.values_list("outcome", flat=True)) == {"applied": 1, "duplicate": N - 1}
    assert Customer.objects.get(pk=customer.pk).balance_fen == 56000
    assert sorted(WalletEvent.objects.filter(customer=customer).values_list("reason", "amount")) == [
        ("bonus", 6000),
        ("recharge", 50000),
    ]
    assert Recharge.objects.get(pk=recharge.pk).status == "paid"


def test_sign_in_twice_at_once_credits_one_day(make_customer, race):
    SignInRule.objects.create(day=1, points=5)
    customer = make_customer()

    results = race(lambda i: signin.sign_in(customer_id=customer.pk), N)

    assert sum(not r.already for r in results) == 1, results
    assert SignIn.objects.filter(customer=customer).count() == 1
    assert Customer.objects.get(pk=customer.pk).points == 5
    assert WalletEvent.objects.filter(customer=customer, reason="sign_in").count() == 1
