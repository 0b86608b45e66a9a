"""GET /orders/counts: the caller's orders per status in one query, equal to the list's counts."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.orders.models import Order, OrderStatus

pytestmark = pytest.mark.django_db


def _order(customer, status, n):
    return Order.objects.create(
        order_no=f"T{customer.pk}{n:06d}",
        order_key=f"k{customer.pk}-{n}",
        customer=customer,
        status=status,
        goods_fen=100,
        pay_fen=100,
        pay_deadline=timezone.now(),
    )


def test_counts_match_the_list_per_status(api, customer, make_customer):
    wanted = {"unpaid": 2, "paid": 1, "shipped": 3, "completed": 1, "refunding": 1, "cancelled": 2, "refunded": 0}
    n = 0
    for status, count in wanted.items():
        for _ in range(count):
            n += 1
            _order(customer, status, n)
    other = make_customer()
    _order(other, OrderStatus.PAID, 99)  # someone else's
    with CaptureQueriesContext(connection) as queries:
        response = api.get("/api/v1/orders/counts")
    assert response.status_code == 200
    counts = response.json()
    assert counts == wanted
    assert len([q for q in queries if "orders_order" in q["sql"]]) == 1
    for status in OrderStatus.values:
        assert api.get("/api/v1/orders", {"status": status}).json()["count"] == counts[status]


def test_counts_need_a_token(client):
    assert client.get("/api/v1/orders/counts").status_code == 401
