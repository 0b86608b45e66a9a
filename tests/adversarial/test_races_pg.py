"""State races on PostgreSQL with real threads (the ``race`` fixture: a Barrier releases them
together). Each ends with the conservation checks: stock, slots and money add up."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections import Counter

import pytest
from adv_helpers import assert_conserved
from django.db import connection
from django.utils import timezone

from apps.accounts.models import Address, Coupon, Customer
from apps.appointments.models import Booking, Slot
from apps.appointments.slots import slot_live_bookings
from apps.catalog.models import Sku
from apps.orders import shipments
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import AfterSale, Order
from apps.payments import balance, notifications, order_lifecycle, refunds
from apps.payments import services as payments
from apps.payments.models import Payment, Refund
from starmall.errors import ShopError

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N = 8


def _buyer(make_customer, **kwargs):
    customer = make_customer(**kwargs)
    address = Address.objects.create(
        customer=customer, name="买家", phone="13800000000", province="浙江省", city="杭州市", detail="1号"
    )
    return customer, address


def _order(customer, address, sku, quantity=1, **extra):
    key = order_confirm(
        customer=customer, address_id=address.pk, items=[{"sku_id": sku.pk, "quantity": quantity}], **extra
    )["order_key"]
    return order_create(customer=customer, order_key=key)[0]


def _unexpected(results, allowed=(ShopError,)):
    return [r for r in results if isinstance(r, BaseException) and not isinstance(r, allowed)]


def test_balance_pay_clicked_eight_times_debits_once(make_customer, make_sku, race):
    sku = make_sku(price_fen=12800, stock=5)
    customer, address = _buyer(make_customer, balance_fen=100000)
    order = _order(customer, address, sku)

    results = race(lambda i: balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk), N)

    assert not _unexpected(results), results
    assert sum(isinstance(r, Order) for r in results) == 1, results
    assert Customer.objects.get(pk=customer.pk).balance_fen == 100000 - 12800
    assert Payment.objects.filter(order=order).count() == 1
    assert_conserved({sku.pk: 5})


def test_balance_enough_for_one_of_two_orders_pays_exactly_one(make_customer, make_sku, race):
    sku = make_sku(price_fen=12800, stock=5)
    customer, address = _buyer(make_customer, balance_fen=20000)
    pair = [_order(customer, address, sku), _order(customer, address, sku)]

    results = race(lambda i: balance.payment_balance_pay(order_no=pair[i % 2].order_no, customer_id=customer.pk), N)

    assert not _unexpected(results), results
    assert sum(isinstance(r, Order) for r in results) == 1, results
    assert Customer.objects.get(pk=customer.pk).balance_fen == 20000 - 12800
    assert sorted(Order.objects.values_list("status", flat=True)) == ["paid", "unpaid"]
    assert_conserved({sku.pk: 5})


def test_balance_pay_racing_the_wechat_notification_never_charges_twice(make_customer, make_sku, wechat, race):
    sku = make_sku(price_fen=12800, stock=5)
    customer, address = _buyer(make_customer, balance_fen=100000)
    order = _order(customer, address, sku)
    payments.payment_wechat_start(order_no=order.order_no, customer_id=customer.pk)
    wechat.control.pay(order.order_no)  # the user paid at WeChat; the notification is on its way
    body = wechat.control.notifications()[0]["body"].encode()

    def act(i):
        if i == 0:
            return balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
        return notifications.payment_notification_handle(body)

    results = race(act, N)

    assert not _unexpected(results), results
    order.refresh_from_db()
    assert (order.status, order.pay_method) == ("paid", "wechat")
    assert Customer.objects.get(pk=customer.pk).balance_fen == 100000
    assert Refund.objects.count() == 0
    assert_conserved({sku.pk: 5})


def test_cancel_racing_balance_pay_has_one_winner(make_customer, make_sku, race):
    sku = make_sku(price_fen=6000, stock=5)
    customer, address = _buyer(make_customer, balance_fen=100000, points=500)
    coupon = Coupon.objects.create(
        customer=customer, title="减10", discount_fen=1000, valid_until=timezone.now() + dt.timedelta(days=1)
    )
    order = _order(customer, address, sku, quantity=2, coupon_id=coupon.pk, use_points=200)

    def act(i):
        if i % 2:
            return balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
        return order_lifecycle.order_cancel(order=Order.objects.get(pk=order.pk), actor="customer", reason="x")

    results = race(act, N)

    assert not _unexpected(results), results
    order.refresh_from_db()
    customer.refresh_from_db()
    if order.status == "paid":
        assert customer.balance_fen == 100000 - order.pay_fen and customer.points == 300
        assert Coupon.objects.get(pk=coupon.pk).status == "used"
    else:
        assert order.status == "cancelled"
        assert customer.balance_fen == 100000 and customer.points == 500
        assert Coupon.objects.get(pk=coupon.pk).status == "available"
    assert_conserved({sku.pk: 5})


def test_balance_pay_racing_the_timeout_has_one_winner(make_customer, make_sku, race):
    sku = make_sku(price_fen=6000, stock=5)
    customer, address = _buyer(make_customer, balance_fen=100000)
    order = _order(customer, address, sku, quantity=3)
    later = order.pay_deadline  # the timeout is due right now

    def act(i):
        if i % 2:
            return balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
        return order_lifecycle.order_expire(order_id=order.pk, now=later)

    results = race(act, N)

    assert not _unexpected(results), results
    order.refresh_from_db()
    assert order.status in ("paid", "cancelled")
    expected = 100000 - order.pay_fen if order.status == "paid" else 100000
    assert Customer.objects.get(pk=customer.pk).balance_fen == expected
    assert_conserved({sku.pk: 5})


def test_wechat_start_racing_balance_pay_then_user_pays_keeps_one_payment(make_customer, make_sku, wechat, race):
    from wechat_sandbox.client import SandboxControlError

    sku = make_sku(price_fen=12800, stock=5)
    customer, address = _buyer(make_customer, balance_fen=100000)
    order = _order(customer, address, sku)

    def act(i):
        if i % 2:
            return balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
        return payments.payment_wechat_start(order_no=order.order_no, customer_id=customer.pk)

    results = race(act, 4)
    assert not _unexpected(results), results
    for trade in list(wechat.state.trades.values()):  # the user pays whatever WeChat lets them pay
        try:
            wechat.control.pay(trade.out_trade_no)
        except SandboxControlError:
            pass
    for note in wechat.control.notifications(kind="payment"):
        notifications.payment_notification_handle(note["body"].encode())

    order.refresh_from_db()
    assert order.status == "paid"
    assert_conserved({sku.pk: 5})


def test_refund_requests_of_different_amounts_racing_never_sum_past_paid(make_customer, make_sku, race):
    sku = make_sku(price_fen=6000, stock=5)
    customer, address = _buyer(make_customer, balance_fen=100000)
    order = _order(customer, address, sku, quantity=2)
    balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
    amounts = [5000, 8000, 12000, 7001]

    requests = race(
        lambda i: refunds.refund_request(
            order_no=order.order_no, customer_id=customer.pk, reason=f"r{i}", amount_fen=amounts[i % 4]
        ),
        N,
    )
    assert not _unexpected(requests), requests
    sales = list(AfterSale.objects.filter(order=order))
    approvals = race(lambda i: refunds.after_sale_approve(after_sale_id=sales[i % len(sales)].pk, actor=f"s{i}"), N)
    assert not _unexpected(approvals), approvals
    for refund in Refund.objects.all():
        refunds.refund_execute(refund_id=refund.pk)

    payment = Payment.objects.get(order=order)
    total = sum(Refund.objects.values_list("refund_fen", flat=True))
    assert total == payment.refunded_fen <= payment.total_fee == 12000
    assert Customer.objects.get(pk=customer.pk).balance_fen == 100000 - 12000 + total
    assert_conserved({sku.pk: 5})


def test_same_coupon_in_two_drafts_racing_is_used_once(make_customer, make_sku, race):
    sku = make_sku(price_fen=12800, stock=10)
    customer, address = _buyer(make_customer, points=100)
    coupon = Coupon.objects.create(
        customer=customer, title="减20", discount_fen=2000, valid_until=timezone.now() + dt.timedelta(days=1)
    )
    keys = [
        order_confirm(
            customer=customer,
            address_id=address.pk,
            coupon_id=coupon.pk,
            use_points=100,
            items=[{"sku_id": sku.pk, "quantity": 1}],
        )["order_key"]
        for _ in range(N)
    ]

    results = race(lambda i: order_create(customer=customer, order_key=keys[i]), N)

    assert not _unexpected(results), results
    assert sum(isinstance(r, tuple) for r in results) == 1, results
    assert Order.objects.count() == 1
    assert Customer.objects.get(pk=customer.pk).points == 0
    assert_conserved({sku.pk: 10})


def test_slot_booking_racing_slot_generation_reruns(make_customer, consultation, race):
    from apps.appointments.slots import slots_generate

    slots = consultation.slots[:4]
    drafts = []
    for i in range(N):
        customer = make_customer()
        key = order_confirm(
            customer=customer, slot_id=slots[i % 4].pk, items=[{"sku_id": consultation.sku.pk, "quantity": 1}]
        )["order_key"]
        drafts.append((customer, key))

    def act(i):
        if i % 3 == 2:
            return slots_generate()
        return order_create(customer=drafts[i][0], order_key=drafts[i][1])

    results = race(act, N)

    assert not _unexpected(results), results
    assert (
        Booking.objects.count()
        == Order.objects.count()
        == len({s.pk for s in slots} & set(Order.objects.values_list("slot_id", flat=True)))
    )
    for slot in Slot.objects.filter(pk__in=[s.pk for s in slots]):
        assert slot_live_bookings(slot) == Booking.objects.filter(slot=slot).count() <= 1
    assert_conserved({consultation.sku.pk: 1000})


def test_refund_approval_racing_shipment_does_not_restock_shipped_goods(make_customer, make_sku, monkeypatch):
    """Staff approve a full refund while the warehouse ships the same order. Approval once read
    the order (PAID) unlocked, decided ``restock``, and let the shipment slip in between: the
    shipped units went back on sale. Now approval locks the order row, so a shipment started
    inside that window waits, then finds the order ``refunding`` and is refused; the units
    were never shipped and come back exactly once. Forced interleaving: the shipment starts
    right after approval read the order."""
    sku = make_sku(price_fen=6000, stock=5)
    customer, address = _buyer(make_customer, balance_fen=100000)
    order = _order(customer, address, sku, quantity=2)
    balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
    sale = refunds.refund_request(order_no=order.order_no, customer_id=customer.pk, reason="不要了")
    real = refunds.paying_payment
    shipped, threads = [], []

    def ship_meanwhile(o):
        if not threads:

            def ship():
                try:
                    shipped.append(shipments.order_ship(order=Order.objects.get(pk=order.pk), actor="staff:warehouse"))
                finally:
                    connection.close()

            threads.append(threading.Thread(target=ship))
            threads[0].start()
            time.sleep(0.5)  # the shipment is now waiting for approval's row lock
        return real(o)

    monkeypatch.setattr(refunds, "paying_payment", ship_meanwhile)
    refund = refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:cs")
    monkeypatch.setattr(refunds, "paying_payment", real)
    threads[0].join(10)
    assert shipped == [False]  # refused: the order is refunding
    refunds.refund_execute(refund_id=refund.pk)

    order.refresh_from_db()
    assert order.shipped_at is None and order.status == "refunded"
    assert Sku.objects.get(pk=sku.pk).stock == 5  # never shipped: both units back, once
    assert_conserved({sku.pk: 5})


def test_late_notification_racing_the_timeout_cancel(make_customer, make_sku, wechat, race):
    """The user pays in the last second; the notification and the timeout run together."""
    sku = make_sku(price_fen=12800, stock=5)
    customer, address = _buyer(make_customer)
    order = _order(customer, address, sku, quantity=2)
    payments.payment_wechat_start(order_no=order.order_no, customer_id=customer.pk)
    wechat.control.pay(order.order_no)
    body = wechat.control.notifications()[0]["body"].encode()
    later = order.pay_deadline + dt.timedelta(seconds=1)

    def act(i):
        if i % 2:
            return order_lifecycle.order_expire(order_id=order.pk, now=later)
        return notifications.payment_notification_handle(body)

    results = race(act, N)

    assert not _unexpected(results), results
    order.refresh_from_db()
    assert order.status == "paid"  # WeChat is asked before cancelling: the money is found
    assert Refund.objects.count() == 0
    assert Counter(Payment.objects.values_list("status", flat=True)) == {"paid": 1}
    assert_conserved({sku.pk: 5})
