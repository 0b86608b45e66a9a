"""After-sales, addresses and reviews under races (PostgreSQL, real threads): addresses keep one default and the cap of 20,
a line gets one review and the product counts it once, a return is received (and refunded) once,
auto-receive and the customer's receipt complete an order once."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.accounts import profile, services
from apps.accounts.models import Address
from apps.catalog.models import Product
from apps.orders import services as orders
from apps.orders import shipments
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import AfterSale, Order, OrderEvent
from apps.payments import refunds, returns
from apps.payments.models import Refund
from apps.reviews import services as reviews
from apps.reviews.models import Review
from starmall.errors import InvalidState, LimitExceeded

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

FIELDS = {"name": "王五", "phone": "13700000000", "province": "上海市", "city": "上海市", "detail": "1号"}


def test_racing_default_addresses_leave_exactly_one_default_and_at_most_20(make_customer, race):
    customer = make_customer()
    results = race(lambda i: services.address_create(customer=customer, is_default=True, **FIELDS), 24)
    assert sum(isinstance(r, Address) for r in results) == 20, results
    assert sum(isinstance(r, LimitExceeded) for r in results) == 4, results
    assert Address.objects.filter(customer=customer).count() == 20
    assert Address.objects.filter(customer=customer, is_default=True).count() == 1
    ids = list(Address.objects.filter(customer=customer).values_list("pk", flat=True))
    race(lambda i: profile.address_delete(customer=customer, address_id=ids[i]), 10)
    assert Address.objects.filter(customer=customer).count() == 10
    assert Address.objects.filter(customer=customer, is_default=True).count() == 1


def _paid_shipped(make_customer, make_sku, balance_fen=100_000):
    customer = make_customer(balance_fen=balance_fen)
    Address.objects.create(customer=customer, is_default=True, **FIELDS)
    sku = make_sku(price_fen=5000, stock=10)
    key = order_confirm(customer=customer, items=[{"sku_id": sku.pk, "quantity": 2}])["order_key"]
    order, _ = order_create(customer=customer, order_key=key)
    from apps.payments import balance

    balance.payment_balance_pay(order_no=order.order_no, customer_id=customer.pk)
    order.refresh_from_db()
    assert shipments.order_ship(order=order, actor="staff:t", carrier_code="ems", tracking_no="EM000111222CN")
    return customer, sku, Order.objects.get(pk=order.pk)


def test_racing_reviews_of_one_line_make_one_review_counted_once(make_customer, make_sku, race):
    customer, sku, order = _paid_shipped(make_customer, make_sku)
    assert orders.order_complete(order=order, actor="customer")
    line = order.lines.get()
    results = race(
        lambda i: reviews.review_create(
            order_no=order.order_no, customer_id=customer.pk, line_id=line.pk, rating=1 + i % 5
        ),
        6,
    )
    assert sum(isinstance(r, Review) for r in results) == 1, results
    assert sum(isinstance(r, InvalidState) for r in results) == 5, results
    review = Review.objects.get()
    product = Product.objects.get(pk=sku.product_id)
    assert (product.review_count, product.rating_total) == (1, review.rating)


def test_racing_receipts_of_a_return_refund_once(make_customer, make_sku, race):
    customer, sku, order = _paid_shipped(make_customer, make_sku)
    sale = refunds.refund_request(order_no=order.order_no, customer_id=customer.pk, reason="退货")
    assert returns.after_sale_approve_return(after_sale_id=sale.pk, actor="staff:t")
    returns.after_sale_return_sent(
        refund_no=sale.refund_no, customer_id=customer.pk, carrier="EMS", tracking_no="EM999888777CN"
    )
    results = race(lambda i: returns.after_sale_return_received(after_sale_id=sale.pk, actor=f"staff:{i}"), 5)
    assert sum(isinstance(r, Refund) for r in results) == 1, results
    assert Refund.objects.count() == 1
    refund = Refund.objects.get()
    race(lambda i: refunds.refund_execute(refund_id=refund.pk), 4)
    assert Refund.objects.get().status == "success"
    assert AfterSale.objects.get(pk=sale.pk).status == "refunded"
    customer.refresh_from_db()
    assert customer.balance_fen == 100_000  # paid 10000, got 10000 back once
    assert sku.__class__.objects.get(pk=sku.pk).stock == 10


def test_auto_receive_racing_the_customer_completes_once(make_customer, make_sku, race):
    customer, _, order = _paid_shipped(make_customer, make_sku)
    Order.objects.filter(pk=order.pk).update(shipped_at=timezone.now() - dt.timedelta(days=11))

    def step(i):
        if i % 2:
            return shipments.orders_auto_receive()
        return orders.order_complete(order=Order.objects.get(pk=order.pk), actor="customer")

    race(step, 6)
    assert Order.objects.get(pk=order.pk).status == "completed"
    assert OrderEvent.objects.filter(order=order, to_status="completed").count() == 1
