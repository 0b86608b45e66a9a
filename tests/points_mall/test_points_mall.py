"""The points mall (API.md "Members"): list, exchange a coupon or goods (a paid 0-fen order),
and the refusals: too few points, none left, over the limit — each keeping nothing."""

import pytest
from django.db.models import Sum

from apps.accounts.models import Coupon, Customer, WalletEvent
from apps.catalog.models import Sku
from apps.marketing.models import CouponTemplate
from apps.orders.models import Order
from apps.points_mall import services
from apps.points_mall.models import Exchange, Item
from starmall.errors import InvalidInput

pytestmark = pytest.mark.django_db


def _points_ledger(customer_id: int) -> int:
    rows = WalletEvent.objects.filter(customer_id=customer_id, kind="points", state="available")
    return rows.aggregate(total=Sum("amount"))["total"] or 0


def _exchange(api, item, **body):
    return api.post(f"/api/v1/points-mall/{item.pk}/exchange", body, format="json")


def test_the_list_shows_active_items_without_a_token(make_api, coupon_item, goods_item):
    coupon, goods = coupon_item(points=100, stock=5), goods_item(points=300, stock=2, limit_per_customer=0)
    Item.objects.create(
        name="下架", kind="coupon", coupon_template=coupon.coupon_template, points=1, stock=1, is_active=False
    )

    body = make_api().get("/api/v1/points-mall").json()

    assert body == [
        {
            "id": goods.pk,
            "name": "茶杯",
            "kind": "goods",
            "points": 300,
            "stock": 2,
            "limit_per_customer": 0,
            "image_url": "",
        },
        {
            "id": coupon.pk,
            "name": "10 元券",
            "kind": "coupon",
            "points": 100,
            "stock": 5,
            "limit_per_customer": 1,
            "image_url": "",
        },
    ]


def test_a_coupon_exchange_takes_points_and_stock_and_gives_the_coupon(make_customer, make_api, coupon_item):
    customer = make_customer()
    services_credit(customer, 250)
    item = coupon_item(points=100, stock=5)

    response = _exchange(make_api(customer), item)

    assert response.status_code == 201, response.json()
    body = response.json()
    exchange = Exchange.objects.get()
    assert body == {
        "exchange_no": exchange.exchange_no,
        "kind": "coupon",
        "points": 100,
        "order_no": None,
        "coupon_id": exchange.coupon_id,
    }
    coupon = Coupon.objects.get(pk=body["coupon_id"])
    assert (coupon.customer_id, coupon.discount_fen, coupon.template_id) == (customer.pk, 1000, item.coupon_template_id)
    assert Customer.objects.get(pk=customer.pk).points == 150 == _points_ledger(customer.pk)
    row = WalletEvent.objects.get(customer=customer, reason="exchange")
    assert (row.amount, row.ref) == (-100, exchange.exchange_no)
    assert Item.objects.get(pk=item.pk).stock == 4
    assert CouponTemplate.objects.get(pk=item.coupon_template_id).issued == 1


def test_a_goods_exchange_is_a_paid_zero_fen_order_taking_sku_stock(make_customer, make_api, goods_item, address_of):
    customer = make_customer()
    services_credit(customer, 300)
    address = address_of(customer)
    item = goods_item(points=300, stock=5, sku_stock=10)

    response = _exchange(make_api(customer), item, address_id=address.pk)

    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["kind"], body["points"], body["coupon_id"]) == ("goods", 300, None)
    order = Order.objects.get(order_no=body["order_no"])
    assert (order.status, order.pay_method, order.pay_fen, order.goods_fen, order.freight_fen) == (
        "paid",
        "points",
        0,
        0,
        0,
    )
    assert order.paid_at is not None and order.address["id"] == address.pk
    assert [(line.sku_id, line.quantity, line.price_fen, line.amount_fen) for line in order.lines.all()] == [
        (item.sku_id, 1, 0, 0)
    ]
    assert Sku.objects.get(pk=item.sku_id).stock == 9
    assert Item.objects.get(pk=item.pk).stock == 4
    assert Customer.objects.get(pk=customer.pk).points == 0 == _points_ledger(customer.pk)
    assert WalletEvent.objects.get(reason="exchange").order_no == order.order_no
    # the customer sees it among their orders, to be shipped like any other
    mine = make_api(customer).get("/api/v1/orders").json()["results"]
    assert [o["order_no"] for o in mine] == [order.order_no]


def test_too_few_points_is_409_insufficient_balance_and_keeps_nothing(make_customer, make_api, goods_item, address_of):
    customer = make_customer()
    services_credit(customer, 299)
    address_of(customer)
    item = goods_item(points=300)

    response = _exchange(make_api(customer), item)

    assert (response.status_code, response.json()["code"]) == (409, "insufficient_balance")
    assert Order.objects.count() == 0 and Exchange.objects.count() == 0
    assert (Item.objects.get(pk=item.pk).stock, Sku.objects.get(pk=item.sku_id).stock) == (5, 10)
    assert Customer.objects.get(pk=customer.pk).points == 299 == _points_ledger(customer.pk)


def test_none_left_is_409_insufficient_stock(make_customer, make_api, coupon_item, goods_item, address_of):
    customer = make_customer()
    services_credit(customer, 1000)
    address_of(customer)
    api = make_api(customer)
    empty = coupon_item(stock=0)
    sku_gone = goods_item(stock=5, sku_stock=0)
    template_gone = coupon_item(stock=5, total=1)
    CouponTemplate.objects.filter(pk=template_gone.coupon_template_id).update(issued=1)

    for item in (empty, sku_gone, template_gone):
        response = _exchange(api, item)
        assert (response.status_code, response.json()["code"]) == (409, "insufficient_stock"), item
    assert Exchange.objects.count() == 0 and Order.objects.count() == 0 and Coupon.objects.count() == 0
    assert Item.objects.get(pk=sku_gone.pk).stock == 5 and Item.objects.get(pk=template_gone.pk).stock == 5
    assert Customer.objects.get(pk=customer.pk).points == 1000


def test_over_the_limit_is_409_limit_exceeded(make_customer, make_api, coupon_item):
    customer = make_customer()
    services_credit(customer, 1000)
    api = make_api(customer)
    item = coupon_item(points=100, stock=10, limit_per_customer=2)

    statuses = [_exchange(api, item).status_code for _ in range(2)]
    third = _exchange(api, item)

    assert statuses == [201, 201]
    assert (third.status_code, third.json()["code"]) == (409, "limit_exceeded")
    assert Exchange.objects.filter(customer=customer).count() == 2
    assert Customer.objects.get(pk=customer.pk).points == 800 == _points_ledger(customer.pk)
    assert Item.objects.get(pk=item.pk).stock == 8


def test_goods_need_an_address_and_an_unknown_or_inactive_item_is_404(make_customer, make_api, goods_item):
    customer = make_customer()
    services_credit(customer, 1000)
    api = make_api(customer)
    item = goods_item()

    no_address = _exchange(api, item)
    assert (no_address.status_code, no_address.json()["code"]) == (400, "invalid")
    Item.objects.filter(pk=item.pk).update(is_active=False)
    assert _exchange(api, item).status_code == 404
    assert api.post("/api/v1/points-mall/999999/exchange", {}, format="json").status_code == 404
    assert make_api().post(f"/api/v1/points-mall/{item.pk}/exchange", {}, format="json").status_code == 401
    assert Customer.objects.get(pk=customer.pk).points == 1000


def test_staff_stock_changes_are_relative_and_never_below_zero(coupon_item):
    item = coupon_item(stock=3)

    assert services.item_stock_adjust(item_id=item.pk, delta=4) == 7
    assert services.item_stock_adjust(item_id=item.pk, delta=-7) == 0
    with pytest.raises(InvalidInput):
        services.item_stock_adjust(item_id=item.pk, delta=-1)
    assert Item.objects.get(pk=item.pk).stock == 0


def services_credit(customer, points: int) -> None:
    """Give the customer spendable points the way staff do (a ledger row)."""
    from apps.accounts import wallet

    wallet.points_adjust(customer_id=customer.pk, points=points, ref=f"test:{customer.pk}:{points}")
