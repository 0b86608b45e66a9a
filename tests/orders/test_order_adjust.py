"""The order answer's ``adjust_fen`` (API.md "Corrections"): staff's 改价, so that
``goods_fen + freight_fen - coupon_fen - points_fen + adjust_fen = pay_fen`` holds in every
answer the customer gets (detail, list, create, balance pay), 0 without a price change."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.orders.models import Order
from apps.payments import price_change

pytestmark = pytest.mark.django_db

SUM_KEYS = ("goods_fen", "freight_fen", "coupon_fen", "points_fen", "adjust_fen", "pay_fen")


def adds_up(order: dict) -> bool:
    goods, freight, coupon, points, adjust, pay = (order[k] for k in SUM_KEYS)
    return goods + freight - coupon - points + adjust == pay


@pytest.fixture
def finance(django_user_model):
    return django_user_model.objects.create_superuser(username="finance", password="x")


@pytest.fixture
def shopper(make_customer, make_api):
    customer = make_customer(balance_fen=1_000_000, points=100_000)
    customer.addresses.create(
        name="张三",
        phone="13800000000",
        province="浙江省",
        city="杭州市",
        district="西湖区",
        detail="文三路1号",
        is_default=True,
    )
    return customer, make_api(customer)


def answers(api, order_no: str) -> tuple[dict, dict]:
    """The customer's detail answer and the order's row in their list."""
    detail = api.get(f"/api/v1/orders/{order_no}")
    assert detail.status_code == 200, detail.json()
    listed = api.get("/api/v1/orders")
    assert listed.status_code == 200
    [row] = [o for o in listed.json()["results"] if o["order_no"] == order_no]
    return detail.json(), row


@pytest.mark.parametrize("new_pay_fen", [12000, 15000], ids=["down", "up"])
def test_after_a_price_change_the_customers_answers_add_up(shopper, finance, make_sku, place_order, new_pay_fen):
    customer, api = shopper
    sku = make_sku(price_fen=13800, stock=10)
    created = place_order(api, items=[(sku, 1)])
    assert (created["goods_fen"], created["freight_fen"], created["pay_fen"], created["adjust_fen"]) == (
        13800,
        0,
        13800,
        0,
    )
    price_change.order_price_change(
        order_no=created["order_no"], pay_fen=new_pay_fen, reason="老顾客", user=finance, actor="staff:finance"
    )
    for shown in answers(api, created["order_no"]):
        assert (shown["goods_fen"], shown["pay_fen"], shown["adjust_fen"]) == (13800, new_pay_fen, new_pay_fen - 13800)
        assert adds_up(shown)
    paid = api.post(f"/api/v1/orders/{created['order_no']}/pay", {"method": "balance"}, format="json")
    assert paid.status_code == 200, paid.json()
    assert paid.json()["order"]["adjust_fen"] == new_pay_fen - 13800 and adds_up(paid.json()["order"])
    customer.refresh_from_db()
    assert customer.balance_fen == 1_000_000 - new_pay_fen


def test_without_a_price_change_adjust_fen_is_zero(shopper, make_sku, place_order):
    _, api = shopper
    created = place_order(api, items=[(make_sku(price_fen=3900, stock=10), 2)], use_points=100)
    assert created["adjust_fen"] == 0 and created["points_fen"] > 0 and created["freight_fen"] == 1000
    for shown in answers(api, created["order_no"]):
        assert shown["adjust_fen"] == 0 and adds_up(shown) and shown == created | {"adjust_fen": 0}


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    orders=st.lists(
        st.tuples(
            st.integers(min_value=1000, max_value=20000),  # the SKU's price in fen
            st.integers(min_value=1, max_value=3),  # quantity
            st.integers(min_value=0, max_value=100),  # points to use
            st.one_of(st.none(), st.integers(min_value=1, max_value=90000)),  # 改价 to this, or none
        ),
        min_size=1,
        max_size=4,
    )
)
def test_every_order_answer_adds_up(shopper, finance, make_sku, place_order, orders):
    customer, api = shopper
    Order.objects.filter(customer=customer, status="unpaid").update(status="cancelled")  # the unpaid cap
    made = []
    for price_fen, quantity, points, new_pay_fen in orders[:3]:
        created = place_order(api, items=[(make_sku(price_fen=price_fen, stock=10), quantity)], use_points=points)
        assert adds_up(created) and created["adjust_fen"] == 0
        if new_pay_fen is not None:
            price_change.order_price_change(
                order_no=created["order_no"], pay_fen=new_pay_fen, reason="议价", user=finance, actor="staff:finance"
            )
        made.append((created["order_no"], created["pay_fen"] if new_pay_fen is None else new_pay_fen))
    for order_no, pay_fen in made:
        detail, row = answers(api, order_no)
        assert detail == row and adds_up(detail) and detail["pay_fen"] == pay_fen
        stored = Order.objects.get(order_no=order_no)
        assert detail["adjust_fen"] == stored.adjust_fen
