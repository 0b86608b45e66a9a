"""Confirms priced together (``order_confirm_many``, the gate's order threads) are each the
confirm priced alone (``order_confirm``, Django's view): the same draft field by field, the same
refusal, one refusal never spoiling another's draft — with the batch's reads made once for all."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.accounts.models import Address, Coupon
from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Sku
from apps.members.models import Level, Membership
from apps.orders.confirm import order_confirm, order_confirm_many
from apps.orders.create import order_create
from starmall.errors import InvalidInput, LimitExceeded

pytestmark = pytest.mark.django_db

FRESH = {"order_key", "expires_at"}  # each confirm's own


@pytest.fixture
def shoppers(make_customer, make_sku, address_of, settings):
    """Six confirms of one batch: a plain buyer, an SVIP buyer naming an address and a coupon,
    one asking more than the stock, one naming another's address, one over the unpaid cap, one
    without an address."""
    settings.MAX_UNPAID_ORDERS = 1
    Level.objects.create(name="银卡", growth_min=0, discount_percent=95)
    sku = make_sku(price_fen=3000, stock=5)
    dear = make_sku(price_fen=12000, stock=5, name="紫砂壶")
    Sku.objects.filter(pk=dear.pk).update(member_price_fen=10000)
    plain, svip, greedy, stranger, capped, homeless = (make_customer(points=500) for _ in range(6))
    for c in (plain, greedy, stranger, capped):
        address_of(c)
    default = address_of(svip)
    named = Address.objects.create(
        customer=svip, name="李四", phone="13900000000", province="上海", city="上海市", detail="2号", is_default=False
    )
    Membership.objects.create(customer=svip, svip_expires_at=timezone.now() + dt.timedelta(days=30))
    coupon = Coupon.objects.create(
        customer=svip, title="减20", discount_fen=2000, valid_until=timezone.now() + dt.timedelta(days=3)
    )
    one = [{"sku_id": sku.pk, "quantity": 1}]
    draft = order_confirm(customer=capped, items=one)
    order_create(customer=capped, order_key=draft["order_key"])
    assert default.pk != named.pk
    return [
        (plain, {"items": one}),
        (
            svip,
            {
                "items": [{"sku_id": dear.pk, "quantity": 1}, {"sku_id": sku.pk, "quantity": 2}],
                "address_id": named.pk,
                "coupon_id": coupon.pk,
                "use_points": 100,
            },
        ),
        (greedy, {"items": [{"sku_id": sku.pk, "quantity": 5}]}),
        (stranger, {"items": one, "address_id": named.pk}),
        (capped, {"items": one}),
        (homeless, {"items": one}),
    ]


def _alone(customer, request):
    try:
        return order_confirm(customer=customer, **request)
    except Exception as exc:  # noqa: BLE001 - compared with the batch's
        return exc


def test_a_batch_prices_each_confirm_as_it_is_priced_alone(shoppers):
    together = order_confirm_many(shoppers)
    alone = [_alone(customer, request) for customer, request in shoppers]
    assert [type(r).__name__ for r in together] == [
        "dict",
        "dict",
        InsufficientStock.__name__,
        InvalidInput.__name__,
        LimitExceeded.__name__,
        InvalidInput.__name__,
    ]
    for mine, theirs in zip(together, alone, strict=True):
        if isinstance(mine, dict):
            assert {k: v for k, v in mine.items() if k not in FRESH} == {
                k: v for k, v in theirs.items() if k not in FRESH
            }
            assert mine["order_key"] != theirs["order_key"]
        else:
            assert (type(mine), mine.message, mine.detail) == (type(theirs), theirs.message, theirs.detail)
    svip = together[1]
    # SVIP: the member price 10000 wins over 5 % off 12000; 5 % off the other line (2 x 3000);
    # free express; the coupon's 2000 and 100 points (1 fen each) off what is left
    assert [line["price_fen"] for line in svip["lines"]] == [10000, 3000]
    assert (svip["goods_fen"], svip["member_fen"], svip["freight_fen"]) == (16000, 300, 0)
    assert (svip["coupon_fen"], svip["points_fen"], svip["pay_fen"]) == (2000, 100, 16000 - 300 - 2000 - 100)
    assert svip["address"]["id"] == shoppers[1][1]["address_id"]
    assert [c["id"] for c in svip["usable_coupons"]] == [shoppers[1][1]["coupon_id"]]


def test_a_batch_reads_once_for_all(shoppers, django_assert_num_queries):
    order_confirm_many(shoppers[:1])  # the freight terms into the cache, as in a running shop
    # SKUs, member rows, levels, unpaid orders, addresses, coupons; then alone: the address the
    # stranger named (not theirs) and the homeless buyer's default (none)
    with django_assert_num_queries(8):
        together = order_confirm_many(shoppers)
    assert sum(isinstance(r, dict) for r in together) == 2
    plain = [(customer, request) for customer, request in shoppers[:2]] * 4
    with django_assert_num_queries(6):
        assert all(isinstance(r, dict) for r in order_confirm_many(plain))
