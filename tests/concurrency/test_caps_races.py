"""Per-customer caps under races (PostgreSQL, real threads): one customer's racing creates
cannot pass MAX_UNPAID_ORDERS or hold two unpaid consultations; frozen points and their
release hold under races too."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.accounts import wallet
from apps.accounts.models import Address, Customer, WalletEvent
from apps.appointments.models import Booking
from apps.catalog.models import Sku
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import Order
from starmall.errors import LimitExceeded

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_ten_racing_creates_of_one_customer_make_exactly_max_unpaid_orders(make_customer, make_sku, race, settings):
    settings.MAX_UNPAID_ORDERS = 3
    sku = make_sku(price_fen=1000, stock=100)
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
    keys = [order_confirm(customer=customer, items=[{"sku_id": sku.pk, "quantity": 2}])["order_key"] for _ in range(10)]

    results = race(lambda i: order_create(customer=customer, order_key=keys[i]), 10)

    created = [r for r in results if isinstance(r, tuple)]
    refused = [r for r in results if isinstance(r, LimitExceeded)]
    assert (len(created), len(refused)) == (3, 7), results
    assert Order.objects.filter(customer=customer, status="unpaid").count() == 3
    assert Sku.objects.get(pk=sku.pk).stock == 100 - 3 * 2  # the refused ones kept no stock


def test_five_racing_consultation_creates_hold_one_slot(make_customer, consultation, race):
    customer = make_customer()
    chosen = consultation.slots[-5:]
    keys = [
        order_confirm(customer=customer, slot_id=slot.pk, items=[{"sku_id": consultation.sku.pk, "quantity": 1}])[
            "order_key"
        ]
        for slot in chosen
    ]

    results = race(lambda i: order_create(customer=customer, order_key=keys[i]), 5)

    assert sum(isinstance(r, tuple) for r in results) == 1, results
    assert sum(isinstance(r, LimitExceeded) for r in results) == 4, results
    assert Booking.objects.count() == Order.objects.count() == 1
    assert Booking.objects.filter(slot_id__in=[s.pk for s in chosen], live=True).count() == 1


def test_racing_releases_credit_each_frozen_award_once(make_customer, race):
    customer = make_customer()
    completed = timezone.now() - dt.timedelta(days=30)
    for n in range(6):
        assert wallet.points_award_freeze(
            customer_id=customer.pk, points=100 + n, order_no=f"O{n}", order_live=True, completed_at=completed
        )

    results = race(lambda i: wallet.points_release_due(), 6)

    assert sum(results) == sum(100 + n for n in range(6)), results
    assert Customer.objects.get(pk=customer.pk).points == 615
    assert WalletEvent.objects.filter(state="available", reason="award").count() == 6


def test_points_award_racing_the_refund_approval_always_ends_void(make_customer, make_sku, race, settings):
    """The award follow-up and the approval of a full refund lock the customer's row before
    they look: whichever runs first, the award ends VOID and nothing stays frozen."""
    from apps.orders import followups
    from apps.orders.models import FollowUp
    from apps.payments import balance, refunds

    settings.MAX_UNPAID_ORDERS = 10
    sku = make_sku(price_fen=6000, stock=100)
    customer = make_customer(balance_fen=10**6)
    Address.objects.create(
        customer=customer,
        name="买家",
        phone="13800000000",
        province="浙江省",
        city="杭州市",
        detail="1号",
        is_default=True,
    )
    for _ in range(4):
        key = order_confirm(customer=customer, items=[{"sku_id": sku.pk, "quantity": 1}])["order_key"]
        order, _ = order_create(customer=customer, order_key=key)
        balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
        sale = refunds.refund_request(order_no=order.order_no, customer_id=customer.pk, reason="不要了")
        award = FollowUp.objects.get(order=order, kind="points_award")

        results = race(
            lambda i, award=award, sale=sale: (
                followups.followup_execute(award.pk)
                if i == 0
                else refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:t")
            ),
            2,
        )

        assert results[0] == "done" and not isinstance(results[1], BaseException), results
        assert list(
            WalletEvent.objects.filter(order_no=order.order_no, reason="award").values_list("amount", "state")
        ) == [(70, "void")]
        assert Order.objects.get(pk=order.pk).status == "refunding"
    assert Customer.objects.get(pk=customer.pk).points == 0
    assert not WalletEvent.objects.filter(state="frozen").exists()
