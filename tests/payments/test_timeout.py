"""Unpaid timeout: ask WeChat first, then cancel exactly once (or mark paid)."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.catalog.models import Sku
from apps.orders.models import Order, OrderEvent
from apps.payments import order_lifecycle

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
    assert order_lifecycle.orders_expire_due() == {}
    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"


def test_timeout_cancels_unpaid_and_restores_stock_once(order, sku):
    assert Sku.objects.get(pk=sku.pk).stock == 3
    assert order_lifecycle.orders_expire_due(now=later()) == {"cancelled": 1}
    assert order_lifecycle.orders_expire_due(now=later()) == {}
    row = Order.objects.get(order_no=order["order_no"])
    assert order_lifecycle.order_expire(order_id=row.pk, now=later()) == "not_unpaid"
    assert row.status == "cancelled" and row.cancel_reason == "超时未支付"
    assert Sku.objects.get(pk=sku.pk).stock == 5
    assert OrderEvent.objects.filter(order=row, to_status="cancelled", actor="system:timeout").count() == 1


def test_timeout_closes_wechat_trade_before_cancelling(api, order, wechat):
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    assert order_lifecycle.orders_expire_due(now=later()) == {"cancelled": 1}
    assert wechat.state.trades[order["order_no"]].trade_state == "CLOSED"


def test_timeout_finds_payment_whose_notification_was_lost(api, order, sku, wechat):
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])
    assert order_lifecycle.orders_expire_due(now=later()) == {"paid": 1}
    row = Order.objects.get(order_no=order["order_no"])
    assert row.status == "paid"
    assert Sku.objects.get(pk=sku.pk).stock == 3  # nothing given back


def test_timeout_waits_while_user_is_paying(api, order, wechat):
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.user_paying(order["order_no"])
    assert order_lifecycle.orders_expire_due(now=later()) == {"paying": 1}
    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"


def test_timeout_waits_when_wechat_is_unreachable(api, order, settings):
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    settings.WECHAT_PAY_API_BASE = "http://127.0.0.1:9/"
    assert order_lifecycle.orders_expire_due(now=later()) == {"unknown": 1}
    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"


def test_sweep_goes_round_so_orders_wechat_cannot_settle_never_hold_back_the_rest(
    make_customer, make_api, make_sku, place_order, wechat, monkeypatch
):
    """The sweep is the only path to the timeout: orders whose WeChat answer is
    missing are asked again each round, and every other due order is still reached (limit 2
    stands for 200)."""
    from apps.payments import wechat as wx

    stock = make_sku(price_fen=3600, stock=10)
    made = []
    for i in range(5):
        customer = make_customer()
        address = customer.addresses.create(
            name="买家", phone="13800000000", province="广东省", city="深圳市", detail=f"{i} 号", is_default=True
        )
        api = make_api(customer)
        made.append(place_order(api, items=[(stock, 1)], address=address))
        api.post(f"/api/v1/orders/{made[-1]['order_no']}/pay", {"method": "wechat"}, format="json")
    stuck = {made[3]["order_no"], made[4]["order_no"]}  # the two newest: WeChat does not answer
    real_query = wx.order_query

    def query(*, out_trade_no):
        if out_trade_no in stuck:
            raise wx.PayUnavailable("timeout")
        return real_query(out_trade_no=out_trade_no)

    monkeypatch.setattr(wx, "order_query", query)
    rounds = [order_lifecycle.orders_expire_due(now=later(), limit=2) for _ in range(3)]
    status = dict(Order.objects.values_list("order_no", "status"))
    assert [status[o["order_no"]] for o in made] == ["cancelled", "cancelled", "cancelled", "unpaid", "unpaid"]
    assert sum(sum(r.values()) for r in rounds) == 6  # 2 per round, none skipped
    assert Sku.objects.get(pk=stock.pk).stock == 8  # the two stuck orders still hold theirs
    monkeypatch.setattr(wx, "order_query", real_query)  # WeChat answers again
    order_lifecycle.orders_expire_due(now=later(), limit=2)
    assert Order.objects.filter(status="unpaid").count() == 0
    assert Sku.objects.get(pk=stock.pk).stock == 10


def test_one_sweep_at_a_time(order):
    from django.core.cache import cache

    cache.add(order_lifecycle.EXPIRE_LOCK_KEY, 1, timeout=60)  # another worker is sweeping
    assert order_lifecycle.orders_expire_due(now=later()) == {"busy": 1}
    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"
    cache.delete(order_lifecycle.EXPIRE_LOCK_KEY)
    assert order_lifecycle.orders_expire_due(now=later()) == {"cancelled": 1}


def test_timeout_tasks_keep_their_old_names_for_beat_and_queued_messages():
    from django.conf import settings

    from apps.payments import tasks

    assert tasks.order_expire.name == "apps.orders.tasks.order_expire"
    assert tasks.orders_expire_due.name == "apps.orders.tasks.orders_expire_due"
    assert settings.CELERY_BEAT_SCHEDULE["orders-expire-unpaid"]["task"] == tasks.orders_expire_due.name
