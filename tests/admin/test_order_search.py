"""The order list's search and receiver column (apps/backoffice/order_search.py): order number,
the account's phone, the receiver's phone, the tracking number (exactly), the receiver's name
and the nickname (by their start), the openid; each an index lookup on the orders' own columns
(no join, no leading-wildcard LIKE), proven on PostgreSQL by its plans."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounts.models import Customer
from apps.backoffice.order_search import order_search
from apps.orders import shipments
from apps.orders.models import Order

pytestmark = pytest.mark.django_db
URL = "/admin/orders/order/"


def _found(client, term: str) -> set[str]:
    html = client.get(URL, {"q": term}).content.decode()
    return set(re.findall(r">(\d{18,30})<", html))


@pytest.fixture
def two_orders(paid_orders, buyer, make_customer, make_api, goods_sku, place_order, address_of):
    """One order of the buyer (张三 13800000000, nickname 小明茶友, phone 13900001111) shipped with
    SF1234567890, and one of another customer to a receiver named 李四 (13700000000)."""
    customer = buyer[0]
    Customer.objects.filter(pk=customer.pk).update(nickname="小明茶友", phone="13900001111")
    [mine] = paid_orders(1)
    shipments.order_ship(order=mine, actor="staff:boss", carrier_code="shunfeng", tracking_no="SF1234567890")
    other = make_customer(balance_fen=100_000)
    Customer.objects.filter(pk=other.pk).update(nickname="老王", phone="13600000000")
    address = address_of(other)
    address.name, address.phone = "李四", "13700000000"
    address.save()
    theirs = place_order(make_api(other), items=[(goods_sku, 1)], address=address)
    return mine, Order.objects.get(order_no=theirs["order_no"])


def test_each_key_finds_its_order_and_only_it(boss, two_orders):
    mine, theirs = two_orders
    assert mine.receiver_name == "张三" and mine.receiver_phone == "13800000000"  # generated from the snapshot
    expected = {
        mine.order_no: {mine.order_no},
        "13900001111": {mine.order_no},  # the account's bound phone
        "13800000000": {mine.order_no},  # the receiver's phone
        "SF1234567890": {mine.order_no},  # the tracking number
        "张": {mine.order_no},  # the receiver's name, by its start
        "张三": {mine.order_no},
        "小明": {mine.order_no},  # the nickname, by its start
        "13700000000": {theirs.order_no},
        "李四": {theirs.order_no},
        "老王": {theirs.order_no},
        mine.customer.openid: {mine.order_no},
        "  13700000000  ": {theirs.order_no},  # spaces around a pasted number
    }
    for term, orders in expected.items():
        assert _found(boss, term) == orders, term
    for nothing in ("1380000", "三", "明茶", "SF123", "13800000001"):  # no substring, no partial number
        assert _found(boss, nothing) == set(), nothing
    assert _found(boss, "") == {mine.order_no, theirs.order_no}


def test_the_list_shows_the_receiver(boss, two_orders):
    html = boss.get(URL).content.decode()
    assert "收货人" in html and "张三 13800000000" in html and "李四 13700000000" in html


def test_the_search_reads_orders_by_their_own_columns(two_orders):
    """Two small lookups (customers, shipments), then one query on orders alone: no JOIN and no
    LIKE starting with a wildcard, whatever the term."""
    mine, _ = two_orders
    with CaptureQueriesContext(connection) as queries:
        found = list(order_search(Order.objects.all(), "张三"))
    assert [o.pk for o in found] == [mine.pk]
    assert len(queries) == 3
    for query in queries:
        sql = query["sql"].upper()
        assert " JOIN " not in sql and "LIKE '%" not in sql and "LIKE %S" not in sql, sql
    assert "LIKE" in queries[2]["sql"].upper() and '"RECEIVER_NAME"' in queries[2]["sql"].upper()


def test_postgresql_answers_each_part_from_an_index(two_orders, is_postgres):
    """With sequential scans priced out (a million orders), every branch of the search is an
    index scan: receiver phone and name (text_pattern_ops, LIKE 'x%'), order number, customer."""
    if not is_postgres:
        pytest.skip("PostgreSQL's plans (SQLite ignores text_pattern_ops)")
    mine, _ = two_orders
    queryset = order_search(Order.objects.order_by(), "张三")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        customers = "\n".join(Customer.objects.filter(nickname__startswith="张三").explain().splitlines())
        plan = queryset.explain()
    assert "order_receiver_name_idx" in plan and "order_receiver_phone_idx" in plan, plan
    assert "Seq Scan" not in plan, plan
    assert "customer_nickname_idx" in customers, customers
