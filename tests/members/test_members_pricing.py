"""The member discount and member prices at confirm: the level's discount on goods at their own
price as ``member_fen`` (in confirm and in the order), the SVIP member price as the line's price,
the lower of the two per line and never both, free express freight while SVIP; and, over random
baskets, ``goods + freight - coupon - points + adjust - member = pay`` always."""

import datetime as dt

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.accounts.models import Customer
from apps.catalog.models import Sku
from apps.members import pricing
from apps.members.models import Level, Membership
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import Order

pytestmark = pytest.mark.django_db


def _level(percent: int, growth_min: int = 0) -> Level:
    return Level.objects.create(name=f"L{percent}", growth_min=growth_min, discount_percent=percent)


def _svip(customer, days: int = 30) -> None:
    Membership.objects.update_or_create(
        customer=customer, defaults={"svip_expires_at": timezone.now() + dt.timedelta(days=days)}
    )


def test_level_discount_is_member_fen_in_confirm_and_in_the_order(api, address, make_sku):
    _level(95)
    sku = make_sku(price_fen=3001, stock=10)
    confirmed = api.post("/api/v1/orders/confirm", {"items": [{"sku_id": sku.pk, "quantity": 3}]}, format="json").json()
    assert confirmed["goods_fen"] == 9003 and confirmed["member_fen"] == 9003 * 5 // 100 == 450
    assert confirmed["freight_fen"] == 1000  # below the 99-yuan free-freight line
    assert confirmed["pay_fen"] == 9003 + 1000 - 450
    assert confirmed["lines"][0]["price_fen"] == 3001
    created = api.post("/api/v1/orders", {"order_key": confirmed["order_key"]}, format="json").json()
    assert (created["member_fen"], created["pay_fen"]) == (450, 9553)
    row = Order.objects.get(order_no=created["order_no"])
    assert (row.member_fen, row.pay_fen) == (450, 9553)


def test_without_levels_or_discount_nothing_changes(api, address, make_sku):
    sku = make_sku(price_fen=5000)
    confirmed = api.post("/api/v1/orders/confirm", {"items": [{"sku_id": sku.pk, "quantity": 1}]}, format="json")
    assert confirmed.json()["member_fen"] == 0 and confirmed.json()["pay_fen"] == 6000


def test_svip_member_price_wins_only_when_lower_and_never_with_the_discount(api, customer, address, make_sku):
    _level(90)
    _svip(customer)
    cheap = make_sku(price_fen=10000, name="会员价低")
    Sku.objects.filter(pk=cheap.pk).update(member_price_fen=8000)  # 8000 < 9000: the member price
    dear = make_sku(price_fen=10000, name="会员价高")
    Sku.objects.filter(pk=dear.pk).update(member_price_fen=9500)  # 9500 > 9000: the discount
    body = {"items": [{"sku_id": cheap.pk, "quantity": 2}, {"sku_id": dear.pk, "quantity": 1}]}
    confirmed = api.post("/api/v1/orders/confirm", body, format="json").json()
    prices = {line["sku_id"]: line["price_fen"] for line in confirmed["lines"]}
    assert prices == {cheap.pk: 8000, dear.pk: 10000}
    assert confirmed["goods_fen"] == 26000
    assert confirmed["member_fen"] == 1000  # 10 % of the dear line only
    assert confirmed["freight_fen"] == 0  # SVIP: express freight free
    assert confirmed["pay_fen"] == 25000


def test_svip_free_freight_and_member_price_end_when_it_expires(api, customer, address, make_sku):
    sku = make_sku(price_fen=2000)
    Sku.objects.filter(pk=sku.pk).update(member_price_fen=1500)
    _svip(customer, days=-1)
    confirmed = api.post("/api/v1/orders/confirm", {"items": [{"sku_id": sku.pk, "quantity": 1}]}, format="json")
    assert (confirmed.json()["lines"][0]["price_fen"], confirmed.json()["freight_fen"]) == (2000, 1000)


def test_consultations_get_no_member_discount(api, customer, consultation):
    _level(90)
    _svip(customer)
    sku, slot = consultation.sku, consultation.slots[0]
    confirmed = api.post(
        "/api/v1/orders/confirm", {"items": [{"sku_id": sku.pk, "quantity": 1}], "slot_id": slot.pk}, format="json"
    ).json()
    assert confirmed["member_fen"] == 0 and confirmed["pay_fen"] == 29900


def test_product_detail_adds_member_price_null_when_none(api, make_sku):
    sku = make_sku(price_fen=2000)
    other = Sku.objects.create(product=sku.product, specs={"颜色": "月白"}, price_fen=2500, member_price_fen=2200)
    skus = {s["id"]: s for s in api.get(f"/api/v1/products/{sku.product_id}").json()["skus"]}
    assert skus[sku.pk]["member_price_fen"] is None and skus[other.pk]["member_price_fen"] == 2200


@given(
    price=st.integers(1, 10**6),
    member=st.one_of(st.none(), st.integers(1, 10**6)),
    quantity=st.integers(1, 99),
    percent=st.integers(1, 100),
    svip=st.booleans(),
)
def test_line_price_is_the_lower_of_the_two_never_both(price, member, quantity, percent, svip):
    terms = pricing.MemberTerms(discount_percent=percent, svip=svip)
    line = pricing.line_price(price_fen=price, member_price_fen=member, quantity=quantity, terms=terms)
    discounted = price * quantity - price * quantity * (100 - percent) // 100
    candidates = [discounted] + ([member * quantity] if svip and member is not None else [])
    assert line.price_fen * quantity - line.member_fen == min(candidates)
    assert line.member_fen == 0 or line.price_fen == price  # never both
    assert 0 <= line.member_fen < price * quantity or (line.member_fen == 0)


def test_random_baskets_always_add_up_in_confirm_and_in_the_order(make_customer, make_sku, address_of):
    """Property: over random baskets, levels, SVIP, member prices and points, every draft and
    every order made from it satisfy goods + freight - coupon - points + adjust - member = pay,
    pay >= 1, and each line's price is the SKU's own or (SVIP) its member price."""
    pool = [make_sku(price_fen=100, stock=10**6, name=f"商品{i}") for i in range(6)]
    customer = make_customer(points=10**6)
    address_of(customer)
    level = _level(100)
    made = []

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(
        basket=st.lists(
            st.tuples(
                st.integers(0, 5),
                st.integers(1, 50_000),
                st.one_of(st.none(), st.integers(1, 50_000)),
                st.integers(1, 5),
            ),
            min_size=1,
            max_size=6,
            unique_by=lambda t: t[0],
        ),
        percent=st.integers(1, 100),
        svip=st.booleans(),
        points=st.one_of(st.just(0), st.just(True), st.integers(1, 5000)),
    )
    def check(basket, percent, svip, points):
        Level.objects.filter(pk=level.pk).update(discount_percent=percent)
        _svip(customer, days=30 if svip else -1)
        for index, price, member, _ in basket:
            Sku.objects.filter(pk=pool[index].pk).update(price_fen=price, member_price_fen=member)
        Customer.objects.filter(pk=customer.pk).update(points=10**6)
        customer.refresh_from_db()
        items = [{"sku_id": pool[index].pk, "quantity": quantity} for index, _, _, quantity in basket]
        draft = order_confirm(customer=customer, items=items, use_points=points)
        by_sku = {pool[index].pk: (price, member) for index, price, member, _ in basket}
        for line in draft["lines"]:
            price, member = by_sku[line["sku_id"]]
            assert line["price_fen"] in ((price, member) if svip else (price,))
        assert draft["goods_fen"] == sum(line["amount_fen"] for line in draft["lines"])
        member_fen = draft.get("member_fen", 0)
        total = draft["goods_fen"] + draft["freight_fen"] - draft["coupon_fen"] - draft["points_fen"] - member_fen
        assert draft["pay_fen"] == total >= 1
        assert svip is False or draft["freight_fen"] == 0
        if len(made) < 40:  # the database's CHECK holds the order too
            order, _ = order_create(customer=customer, order_key=draft["order_key"])
            Order.objects.filter(pk=order.pk).update(status="cancelled")  # out of the unpaid caps
            made.append(order.pk)
            row = Order.objects.get(pk=order.pk)
            assert (row.member_fen, row.pay_fen) == (member_fen, draft["pay_fen"])
            assert (
                row.goods_fen + row.freight_fen - row.coupon_fen - row.points_fen + row.adjust_fen - row.member_fen
                == row.pay_fen
            )

    check()
    assert len(made) == 40


def test_random_svip_activity_orders_add_up_with_free_freight_and_no_member_price(make_customer, make_sku, address_of):
    """Property, 秒杀 orders: over random sale prices, levels, SVIP, member prices and points, the
    draft is at the sale's price with no ``member_fen``, freight is free exactly while SVIP, and
    goods + freight - coupon - points - member = pay >= 1 (in the order too)."""
    from apps.marketing.models import FlashSale

    sku = make_sku(price_fen=100, stock=10**6, name="秒杀商品")
    customer = make_customer(points=10**6)
    address_of(customer)
    level = _level(100)
    starts = timezone.now() - dt.timedelta(minutes=5)
    sale = FlashSale.objects.create(
        title="秒杀", sku=sku, price_fen=100, stock=10**6, limit_per_customer=10**6, starts_at=starts,
        ends_at=starts + dt.timedelta(hours=2),
    )  # fmt: skip
    made = []

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(
        price=st.integers(1, 20_000),
        member=st.one_of(st.none(), st.integers(1, 20_000)),
        percent=st.integers(1, 100),
        svip=st.booleans(),
        points=st.one_of(st.just(0), st.just(True), st.integers(1, 5000)),
    )
    def check(price, member, percent, svip, points):
        Level.objects.filter(pk=level.pk).update(discount_percent=percent)
        _svip(customer, days=30 if svip else -1)
        Sku.objects.filter(pk=sku.pk).update(price_fen=price + 5000, member_price_fen=member)
        FlashSale.objects.filter(pk=sale.pk).update(price_fen=price)
        Customer.objects.filter(pk=customer.pk).update(points=10**6)
        customer.refresh_from_db()
        draft = order_confirm(
            customer=customer, items=[{"sku_id": sku.pk, "quantity": 1}], flash_sale_id=sale.pk, use_points=points
        )
        assert [line["price_fen"] for line in draft["lines"]] == [price]
        assert draft.get("member_fen", 0) == 0
        assert (draft["freight_fen"] == 0) is (svip or price >= 9900)  # the default template: free from 99 yuan
        total = draft["goods_fen"] + draft["freight_fen"] - draft["coupon_fen"] - draft["points_fen"]
        assert draft["pay_fen"] == total >= 1
        if len(made) < 15:
            order, _ = order_create(customer=customer, order_key=draft["order_key"])
            Order.objects.filter(pk=order.pk).update(status="cancelled")  # out of the unpaid caps
            made.append(order.pk)
            row = Order.objects.get(pk=order.pk)
            assert (row.member_fen, row.freight_fen, row.pay_fen) == (0, draft["freight_fen"], draft["pay_fen"])

    check()
    assert len(made) == 15
