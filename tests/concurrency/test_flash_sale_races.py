"""Flash sales (秒杀) under races on PostgreSQL, real threads released by a Barrier: the
per-customer limit, the sale's stock and the SKU's stock hold, and units come back once."""

import datetime as dt
from collections import Counter

import pytest
from django.utils import timezone

from apps.accounts.models import Address
from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Sku
from apps.marketing.models import FlashSale, FlashSalePurchase
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import Order
from starmall.errors import LimitExceeded

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _sale(sku, *, stock, limit):
    now = timezone.now()
    return FlashSale.objects.create(
        title="秒杀",
        sku=sku,
        price_fen=9900,
        stock=stock,
        limit_per_customer=limit,
        starts_at=now - dt.timedelta(minutes=1),
        ends_at=now + dt.timedelta(hours=1),
    )


def _buyer(make_customer):
    customer = make_customer()
    address = Address.objects.create(
        customer=customer, name="买家", phone="13800000000", province="浙江省", city="杭州市", detail="1号"
    )
    return customer, address


def _buy(customer, address, sale, quantity=1):
    """Confirm then create, as a buyer pressing "buy": (order, created) or the error raised."""
    key = order_confirm(
        customer=customer,
        address_id=address.pk,
        flash_sale_id=sale.pk,
        items=[{"sku_id": sale.sku_id, "quantity": quantity}],
    )["order_key"]
    return order_create(customer=customer, order_key=key)


def _state(sale):
    sale = FlashSale.objects.get(pk=sale.pk)
    return sale.stock, sale.sold, Sku.objects.get(pk=sale.sku_id).stock


def test_flash_sale_one_customer_racing_twenty_orders_gets_the_limit(make_customer, make_sku, is_postgres, race):
    assert is_postgres
    sale = _sale(make_sku(price_fen=12800, stock=20), stock=10, limit=2)
    customer, address = _buyer(make_customer)

    results = race(lambda i: _buy(customer, address, sale), 20)

    created = [r for r in results if isinstance(r, tuple)]
    assert len(created) == 2, results
    assert all(isinstance(r, LimitExceeded) for r in results if not isinstance(r, tuple)), results
    assert Order.objects.filter(customer=customer, flash_sale=sale).count() == 2
    assert _state(sale) == (8, 2, 18)
    assert FlashSalePurchase.objects.get(sale=sale, customer=customer).quantity == 2


def test_flash_sale_thirty_customers_racing_for_five_units(make_customer, make_sku, race):
    sku = make_sku(price_fen=12800, stock=20)
    sale = _sale(sku, stock=5, limit=1)
    buyers = [_buyer(make_customer) for _ in range(30)]

    results = race(lambda i: _buy(*buyers[i], sale), 30)

    created = [r for r in results if isinstance(r, tuple)]
    assert len(created) == 5, results
    assert all(isinstance(r, InsufficientStock) for r in results if not isinstance(r, tuple)), results
    assert _state(sale) == (0, 5, 15)  # the sale sold out, the SKU lost exactly 5: no oversell
    assert Order.objects.filter(flash_sale=sale).count() == 5
    assert len({order.customer_id for order, _ in created}) == 5
    assert sorted(FlashSalePurchase.objects.filter(sale=sale).values_list("quantity", flat=True)) == [1] * 5
    assert {order.pay_fen for order, _ in created} == {9900}


def test_flash_sale_cancel_racing_cancel_gives_units_back_once(make_customer, make_sku, make_api, race):
    sale = _sale(make_sku(price_fen=12800, stock=20), stock=5, limit=2)
    customer, address = _buyer(make_customer)
    order, _ = _buy(customer, address, sale, quantity=2)
    assert _state(sale) == (3, 2, 18)
    clients = [make_api(customer) for _ in range(8)]

    results = race(lambda i: clients[i].post(f"/api/v1/orders/{order.order_no}/cancel").status_code, 8)

    assert Counter(results) == {200: 1, 409: 7}, results
    assert Order.objects.get(pk=order.pk).status == "cancelled"
    assert _state(sale) == (5, 0, 20)
    assert FlashSalePurchase.objects.get(sale=sale, customer=customer).quantity == 0


def test_flash_sale_cancels_racing_new_buyers_never_oversell(make_customer, make_sku, make_api, race):
    """Half the threads cancel their orders while the other half buy the units they free."""
    sku = make_sku(price_fen=12800, stock=20)
    sale = _sale(sku, stock=4, limit=1)
    holders = [_buyer(make_customer) for _ in range(4)]
    held = [_buy(customer, address, sale)[0] for customer, address in holders]
    clients = [make_api(customer) for customer, _ in holders]
    newcomers = [_buyer(make_customer) for _ in range(8)]
    assert _state(sale) == (0, 4, 16)

    def act(i):
        if i < 4:
            return clients[i].post(f"/api/v1/orders/{held[i].order_no}/cancel").status_code
        return _buy(*newcomers[i - 4], sale)

    results = race(act, 12)

    assert results[:4] == [200] * 4, results
    bought = sum(isinstance(r, tuple) for r in results[4:])
    assert all(isinstance(r, (tuple, InsufficientStock)) for r in results[4:]), results
    stock, sold, sku_stock = _state(sale)
    assert sold == bought == Order.objects.filter(flash_sale=sale, status="unpaid").count()
    assert stock + sold == 4 and stock >= 0
    assert sku_stock == 20 - bought
