"""Racing reversals of one points-mall exchange (PostgreSQL): staff double clicks and two staff
members at once give the points and the stock back exactly once."""

import pytest
from django.db.models import Sum

from apps.accounts import wallet
from apps.accounts.models import Coupon, Customer, WalletEvent
from apps.catalog.models import Sku
from apps.marketing.models import CouponTemplate
from apps.orders.models import Order
from apps.points_mall import reversals, services
from apps.points_mall.models import Item
from starmall.errors import InvalidState

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N = 6


def _holder(make_customer, address_of, points: int) -> Customer:
    customer = make_customer()
    wallet.points_adjust(customer_id=customer.pk, points=points, ref=f"race:{customer.pk}")
    address_of(customer)
    return customer


def _reverse_race(race, exchange_id: int) -> list:
    def reverse(i):
        try:
            return reversals.exchange_reverse(exchange_id=exchange_id, actor=f"staff:{i}").reversed_by
        except InvalidState:
            return "refused"

    return race(reverse, N)


def _points(customer) -> tuple[int, int]:
    rows = WalletEvent.objects.filter(customer=customer, kind="points", state="available")
    return Customer.objects.get(pk=customer.pk).points, rows.aggregate(n=Sum("amount"))["n"]


def test_racing_reversals_of_a_goods_exchange_give_back_once(make_customer, address_of, make_sku, race):
    customer = _holder(make_customer, address_of, 500)
    item = Item.objects.create(
        name="茶杯", kind="goods", sku=make_sku(price_fen=9900, stock=10), points=300, stock=5, limit_per_customer=0
    )
    exchange = services.item_exchange(item_id=item.pk, customer_id=customer.pk)
    results = _reverse_race(race, exchange.pk)
    assert sorted(results).count("refused") == N - 1
    assert Order.objects.get(order_no=exchange.order_no).status == "refunded"
    assert _points(customer) == (500, 500)
    assert (Item.objects.get(pk=item.pk).stock, Sku.objects.get(pk=item.sku_id).stock) == (5, 10)
    assert WalletEvent.objects.filter(reason="return", ref=exchange.exchange_no).count() == 1


def test_racing_reversals_of_a_coupon_exchange_give_back_once(make_customer, address_of, race):
    customer = _holder(make_customer, address_of, 500)
    template = CouponTemplate.objects.create(name="10 元券", kind="amount", amount_fen=1000, valid_days=30, total=100)
    item = Item.objects.create(name="10 元券", kind="coupon", coupon_template=template, points=100, stock=5)
    exchange = services.item_exchange(item_id=item.pk, customer_id=customer.pk)
    results = _reverse_race(race, exchange.pk)
    assert sorted(results).count("refused") == N - 1
    assert _points(customer) == (500, 500)
    assert Item.objects.get(pk=item.pk).stock == 5
    assert Coupon.objects.get(pk=exchange.coupon_id).used_order_no == exchange.exchange_no
