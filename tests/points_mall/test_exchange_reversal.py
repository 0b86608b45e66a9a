"""Reversing a points-mall exchange: a goods exchange's 0-fen order refunded before shipping (or
after its goods came back), a coupon exchange whose coupon is unused; the points come back as
one ledger row, the item's and the SKU's stock by one, once; anything else keeps everything."""

import pytest
from django.db.models import Sum

from apps.accounts import wallet
from apps.accounts.models import Coupon, Customer, WalletEvent
from apps.catalog.models import Product, Sku
from apps.orders.models import Order
from apps.orders.shipments import order_ship
from apps.points_mall import reversals, services
from apps.points_mall.models import Exchange, Item
from starmall.errors import InvalidState

pytestmark = pytest.mark.django_db


def _points(customer) -> tuple[int, int]:
    """(the customer's points, the sum of their available ledger rows)."""
    rows = WalletEvent.objects.filter(customer=customer, kind="points", state="available")
    return Customer.objects.get(pk=customer.pk).points, rows.aggregate(n=Sum("amount"))["n"] or 0


@pytest.fixture
def holder(make_customer, address_of):
    def make(points: int = 1000) -> Customer:
        customer = make_customer()
        address_of(customer)
        wallet.points_adjust(customer_id=customer.pk, points=points, ref=f"test:{customer.pk}")
        return customer

    return make


def _stocks(item) -> tuple[int, int | None]:
    sku_stock = Sku.objects.get(pk=item.sku_id).stock if item.sku_id else None
    return Item.objects.get(pk=item.pk).stock, sku_stock


def test_a_goods_exchange_not_shipped_is_reversed_once(holder, goods_item):
    customer = holder(1000)
    item = goods_item(points=300, stock=5, sku_stock=10)
    exchange = services.item_exchange(item_id=item.pk, customer_id=customer.pk)
    assert (_points(customer), _stocks(item)) == ((700, 700), (4, 9))
    reversed_ = reversals.exchange_reverse(exchange_id=exchange.pk, actor="staff:ops")
    assert reversed_.reversed_at is not None and reversed_.reversed_by == "staff:ops"
    order = Order.objects.get(order_no=exchange.order_no)
    assert order.status == "refunded"
    assert (_points(customer), _stocks(item)) == ((1000, 1000), (5, 10))
    assert Product.objects.get(pk=Sku.objects.get(pk=item.sku_id).product_id).sales == 0
    returned = WalletEvent.objects.get(customer=customer, reason="return")
    assert (returned.amount, returned.ref, returned.order_no) == (300, exchange.exchange_no, exchange.order_no)
    with pytest.raises(InvalidState):  # a second click: nothing more
        reversals.exchange_reverse(exchange_id=exchange.pk, actor="staff:ops")
    assert (_points(customer), _stocks(item)) == ((1000, 1000), (5, 10))
    assert WalletEvent.objects.filter(customer=customer, reason="return").count() == 1


def test_a_shipped_goods_exchange_waits_for_its_goods_to_come_back(holder, goods_item):
    customer = holder(1000)
    item = goods_item(points=300, stock=5, sku_stock=10)
    exchange = services.item_exchange(item_id=item.pk, customer_id=customer.pk)
    assert order_ship(
        order=Order.objects.get(order_no=exchange.order_no),
        actor="staff",
        carrier_code="shunfeng",
        tracking_no="SF1234567890",
    )
    with pytest.raises(InvalidState):
        reversals.exchange_reverse(exchange_id=exchange.pk, actor="staff:ops")
    assert Exchange.objects.get(pk=exchange.pk).reversed_at is None
    assert (_points(customer), _stocks(item)) == ((700, 700), (4, 9))  # nothing kept
    reversals.exchange_reverse(exchange_id=exchange.pk, actor="staff:ops", returned=True)
    assert Order.objects.get(order_no=exchange.order_no).status == "refunded"
    assert (_points(customer), _stocks(item)) == ((1000, 1000), (5, 10))


def test_an_unused_coupon_exchange_is_reversed_and_a_used_one_is_not(holder, coupon_item):
    customer = holder(1000)
    item = coupon_item(points=100, stock=5, limit_per_customer=0)
    first = services.item_exchange(item_id=item.pk, customer_id=customer.pk)
    second = services.item_exchange(item_id=item.pk, customer_id=customer.pk)
    assert (_points(customer), _stocks(item)) == ((800, 800), (3, None))
    reversals.exchange_reverse(exchange_id=first.pk, actor="staff:ops")
    coupon = Coupon.objects.get(pk=first.coupon_id)
    assert (coupon.status, coupon.used_order_no) == ("used", first.exchange_no)  # withdrawn: never usable
    assert (_points(customer), _stocks(item)) == ((900, 900), (4, None))
    Coupon.objects.filter(pk=second.coupon_id).update(status="used", used_order_no="20261206000001")
    with pytest.raises(InvalidState):
        reversals.exchange_reverse(exchange_id=second.pk, actor="staff:ops")
    assert Exchange.objects.get(pk=second.pk).reversed_at is None
    assert (_points(customer), _stocks(item)) == ((900, 900), (4, None))


def test_the_admin_action_reverses_through_the_service_with_its_permission(holder, goods_item, role_client):
    customer = holder(1000)
    item = goods_item(points=300, stock=5, sku_stock=10)
    exchange = services.item_exchange(item_id=item.pk, customer_id=customer.pk)
    url = "/admin/points_mall/exchange/"
    finance = role_client("财务")  # may look, may not reverse
    refused = finance.post(url, {"action": "reverse", "_selected_action": [exchange.pk]})
    assert refused.status_code in (200, 302, 403)
    assert Exchange.objects.get(pk=exchange.pk).reversed_at is None
    ops = role_client("运营")
    done = ops.post(url, {"action": "reverse", "_selected_action": [exchange.pk]}, follow=True)
    assert "已撤销，退回 300 积分" in done.content.decode()
    assert Exchange.objects.get(pk=exchange.pk).reversed_by == f"staff:{ops.user.username}"
    assert (_points(customer), _stocks(item)) == ((1000, 1000), (5, 10))
