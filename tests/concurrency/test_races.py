"""Races on PostgreSQL with real threads: the invariants hold under contention."""

from collections import Counter

import pytest

from apps.accounts.models import Address
from apps.appointments.exceptions import SlotUnavailable
from apps.appointments.models import Booking
from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Product, Sku
from apps.orders import services as orders
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import FollowUp, Order
from apps.payments import notifications, order_lifecycle
from apps.payments import services as payments
from apps.payments.exceptions import OrderNotCancelled
from apps.payments.models import Notification, Payment

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N = 8


def _buyers(make_customer, n):
    buyers = []
    for _ in range(n):
        customer = make_customer()
        address = Address.objects.create(
            customer=customer, name="买家", phone="13800000000", province="浙江省", city="杭州市", detail="1号"
        )
        buyers.append((customer, address))
    return buyers


def test_buyers_racing_for_fewer_units_get_exactly_the_stock(make_customer, make_sku, is_postgres, race):
    assert is_postgres
    sku = make_sku(price_fen=3600, stock=3)
    other = make_sku(price_fen=100, stock=100, name="茶巾")
    drafts = []
    for customer, address in _buyers(make_customer, N):
        draft = order_confirm(
            customer=customer,
            address_id=address.pk,
            items=[{"sku_id": other.pk, "quantity": 1}, {"sku_id": sku.pk, "quantity": 1}],
        )
        drafts.append((customer, draft["order_key"]))

    results = race(lambda i: order_create(customer=drafts[i][0], order_key=drafts[i][1]), N)

    created = [r for r in results if isinstance(r, tuple)]
    refused = [r for r in results if isinstance(r, InsufficientStock)]
    assert (len(created), len(refused)) == (3, N - 3), results
    assert Sku.objects.get(pk=sku.pk).stock == 0
    assert Sku.objects.get(pk=other.pk).stock == 100 - 3  # losers' first lines rolled back
    assert Order.objects.count() == 3


def test_buyers_racing_for_one_slot_make_one_booking(make_customer, consultation, race):
    slot = consultation.slots[2]
    drafts = []
    for customer, _ in _buyers(make_customer, N):
        draft = order_confirm(
            customer=customer, slot_id=slot.pk, items=[{"sku_id": consultation.sku.pk, "quantity": 1}]
        )
        drafts.append((customer, draft["order_key"]))

    results = race(lambda i: order_create(customer=drafts[i][0], order_key=drafts[i][1]), N)

    assert sum(isinstance(r, tuple) for r in results) == 1, results
    assert sum(isinstance(r, SlotUnavailable) for r in results) == N - 1
    assert Booking.objects.filter(slot_id=slot.pk, live=True).count() == 1
    assert Booking.objects.count() == Order.objects.count() == 1
    assert Sku.objects.get(pk=consultation.sku.pk).stock == 1000 - 1


def test_same_order_key_racing_makes_one_order(make_customer, make_sku, race):
    sku = make_sku(stock=10)
    ((customer, address),) = _buyers(make_customer, 1)
    key = order_confirm(customer=customer, address_id=address.pk, items=[{"sku_id": sku.pk, "quantity": 2}])[
        "order_key"
    ]

    results = race(lambda i: order_create(customer=customer, order_key=key), N)

    assert all(isinstance(r, tuple) for r in results), results
    assert len({r[0].order_no for r in results}) == 1
    assert sum(r[1] for r in results) == 1  # exactly one call created it
    assert Order.objects.count() == 1
    assert Sku.objects.get(pk=sku.pk).stock == 8


def test_same_notification_delivered_concurrently_pays_once(make_customer, make_sku, wechat, race):
    _, order, sku, body = _paid_at_wechat(make_customer, make_sku, wechat)

    results = race(lambda i: notifications.payment_notification_handle(body), N)

    assert all(b"SUCCESS" in r for r in results), results
    assert Counter(Notification.objects.values_list("outcome", flat=True)) == {"applied": 1, "duplicate": N - 1}
    assert Order.objects.get(pk=order.pk).status == "paid"
    assert Payment.objects.get(order=order).status == "paid"
    assert FollowUp.objects.filter(order=order).count() == 3
    assert Product.objects.get(pk=sku.product_id).sales == 1


def test_customer_cancel_racing_the_timeout_restores_once(make_customer, make_sku, race):
    import datetime as dt

    from django.utils import timezone

    from apps.accounts.models import Coupon, Customer, WalletEvent

    sku = make_sku(price_fen=6000, stock=5)
    ((customer, address),) = _buyers(make_customer, 1)
    Customer.objects.filter(pk=customer.pk).update(points=1000)
    customer.refresh_from_db()
    coupon = Coupon.objects.create(
        customer=customer,
        title="满100减20",
        discount_fen=2000,
        min_spend_fen=10000,
        valid_until="2099-01-01T00:00:00+08:00",
    )
    key = order_confirm(
        customer=customer,
        address_id=address.pk,
        coupon_id=coupon.pk,
        use_points=300,
        items=[{"sku_id": sku.pk, "quantity": 3}],
    )["order_key"]
    order, _ = order_create(customer=customer, order_key=key)
    assert (Customer.objects.get(pk=customer.pk).points, Coupon.objects.get(pk=coupon.pk).status) == (700, "used")
    later = timezone.now() + dt.timedelta(hours=1)

    def act(i):
        if i % 2:
            return order_lifecycle.order_expire(order_id=order.pk, now=later)
        return order_lifecycle.order_cancel(order=Order.objects.get(pk=order.pk), actor="customer", reason="x")

    results = race(act, N)

    assert sum(isinstance(r, Order) or r == "cancelled" for r in results) == 1, results
    assert all(isinstance(r, (Order, str, OrderNotCancelled)) for r in results), results
    assert Sku.objects.get(pk=sku.pk).stock == 5
    assert Order.objects.get(pk=order.pk).status == "cancelled"
    assert Customer.objects.get(pk=customer.pk).points == 1000
    assert Coupon.objects.get(pk=coupon.pk).status == "available"
    assert WalletEvent.objects.filter(reason="return").count() == 1


def _paid_at_wechat(make_customer, make_sku, wechat, *, quantity=1):
    """An order of ``quantity`` x 128.00 yuan the customer paid at WeChat; the signed
    notification (bytes) not delivered yet. Returns (customer, order, sku, notification)."""
    sku = make_sku(price_fen=12800, stock=5)
    ((customer, address),) = _buyers(make_customer, 1)
    key = order_confirm(customer=customer, address_id=address.pk, items=[{"sku_id": sku.pk, "quantity": quantity}])[
        "order_key"
    ]
    order, _ = order_create(customer=customer, order_key=key)
    payments.payment_wechat_start(order_no=order.order_no, customer_id=customer.pk)
    wechat.control.pay(order.order_no)
    return customer, order, sku, wechat.control.notifications()[0]["body"].encode()


def test_refund_double_clicks_and_approvals_racing_make_one_refund(make_customer, make_sku, wechat, race):
    from apps.orders.models import AfterSale
    from apps.payments import refunds
    from apps.payments.models import Refund

    customer, order, _, notification = _paid_at_wechat(make_customer, make_sku, wechat)
    notifications.payment_notification_handle(notification)

    requests = race(
        lambda i: refunds.refund_request(order_no=order.order_no, customer_id=customer.pk, reason="重复点击"), N
    )
    assert {r.refund_no for r in requests} == {f"{order.order_no}R1"}, requests
    assert AfterSale.objects.count() == 1
    sale = AfterSale.objects.get()

    approvals = race(lambda i: refunds.after_sale_approve(after_sale_id=sale.pk, actor=f"staff:{i}"), N)
    assert sum(r is not None for r in approvals) == 1, approvals
    refund = Refund.objects.get()

    runs = race(lambda i: refunds.refund_execute(refund_id=refund.pk), N)
    assert set(runs) <= {"processing", "submitted"} and "submitted" in runs, runs  # losers see it held
    assert Refund.objects.get().attempts == 1  # claimed once: one call to WeChat
    assert len(wechat.control.refunds()) == 1
    assert Payment.objects.get(order=order).refunded_fen == 12800


def test_late_notifications_racing_queue_one_refund(make_customer, make_sku, wechat, race):
    from apps.payments.models import Refund

    _, order, sku, body = _paid_at_wechat(make_customer, make_sku, wechat, quantity=2)
    assert orders.order_mark_cancelled(order=order, actor="system:test", reason="timeout raced the payment")

    results = race(lambda i: notifications.payment_notification_handle(body), N)

    assert all(b"SUCCESS" in r for r in results), results
    assert Refund.objects.filter(reason="late_payment").count() == 1
    assert Order.objects.get(pk=order.pk).status == "cancelled"
    assert Sku.objects.get(pk=sku.pk).stock == 5
