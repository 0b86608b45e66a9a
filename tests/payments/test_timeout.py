"""Unpaid timeout: ask WeChat first, then cancel exactly once (or mark paid)."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.catalog.models import Sku
from apps.orders.models import Order, OrderEvent
from apps.payments import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def sku(make_sku):
    return make_sku(price_fen=3600, stock=5)


@pytest.fixture
def order(api, sku, address, place_order):
    return place_order(api, items=[(sku, 2)], address=address)


def later():
    return timezone.now() + dt.timedelta(minutes=31)


def test_timeout_not_due_does_nothing(order):
    assert services.orders_expire_due() == {}
    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"


def test_timeout_cancels_unpaid_and_restores_stock_once(order, sku):
    assert Sku.objects.get(pk=sku.pk).stock == 3
    assert services.orders_expire_due(now=later()) == {"cancelled": 1}
    assert services.orders_expire_due(now=later()) == {}
    row = Order.objects.get(order_no=order["order_no"])
    assert services.order_expire(order_id=row.pk, now=later()) == "not_unpaid"
    assert row.status == "cancelled" and row.cancel_reason == "超时未支付"
    assert Sku.objects.get(pk=sku.pk).stock == 5
    assert OrderEvent.objects.filter(order=row, to_status="cancelled", actor="system:timeout").count() == 1


def test_timeout_closes_wechat_trade_before_cancelling(api, order, wechat):
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    assert services.orders_expire_due(now=later()) == {"cancelled": 1}
    assert wechat.state.trades[order["order_no"]].trade_state == "CLOSED"


def test_timeout_finds_payment_whose_notification_was_lost(api, order, sku, wechat):
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])
    assert services.orders_expire_due(now=later()) == {"paid": 1}
    row = Order.objects.get(order_no=order["order_no"])
    assert row.status == "paid"
    assert Sku.objects.get(pk=sku.pk).stock == 3  # nothing given back


def test_timeout_waits_while_user_is_paying(api, order, wechat):
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.user_paying(order["order_no"])
    assert services.orders_expire_due(now=later()) == {"paying": 1}
    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"


def test_timeout_waits_when_wechat_is_unreachable(api, order, settings):
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    settings.WECHAT_PAY_API_BASE = "http://127.0.0.1:9/"
    assert services.orders_expire_due(now=later()) == {"unknown": 1}
    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"
