"""A paid member (SVIP) buying in a 秒杀, 拼团 or 砍价: express freight is free and the points
earned are doubled (API.md Members), while the activity's price stays final: no level discount
(``member_fen``) and no member price."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.accounts.models import WalletEvent
from apps.catalog.models import Sku
from apps.members.models import Level, Membership
from apps.orders import followups
from apps.orders.models import FollowUp, Order

pytestmark = pytest.mark.django_db

FREIGHT = 1000  # the default template's first piece (free from 99.00 yuan of goods)


def _member(customer, *, svip: bool) -> None:
    Level.objects.get_or_create(growth_min=0, defaults={"name": "金卡", "discount_percent": 90})
    expires = timezone.now() + dt.timedelta(days=30 if svip else -1)
    Membership.objects.update_or_create(customer=customer, defaults={"svip_expires_at": expires})


def _priced(draft: dict) -> tuple:
    return (draft["lines"][0]["price_fen"], draft["goods_fen"], draft["freight_fen"], draft.get("member_fen", 0))


@pytest.mark.parametrize("svip", [True, False])
def test_a_flash_sale_order_ships_free_for_svip_at_the_sale_price(
    api, customer, address, make_sale, flash_sku, buy, svip, freight_default
):
    assert freight_default.first_fee_fen == FREIGHT
    Sku.objects.filter(pk=flash_sku.pk).update(member_price_fen=3000)  # lower than the sale: not used
    _member(customer, svip=svip)
    sale = make_sale(price_fen=5000)
    confirmed, created = buy(api, sale, address=address)
    assert confirmed.status_code == 200, confirmed.json()
    freight = 0 if svip else FREIGHT
    assert _priced(confirmed.json()) == (5000, 5000, freight, 0)
    assert confirmed.json()["pay_fen"] == 5000 + freight
    order = Order.objects.get(order_no=created.json()["order_no"])
    assert (order.goods_fen, order.freight_fen, order.member_fen, order.pay_fen) == (5000, freight, 0, 5000 + freight)


def test_a_group_buy_order_ships_free_for_svip_without_the_level_discount(
    shopper, make_group_buy, group_order, group_sku
):
    Sku.objects.filter(pk=group_sku.pk).update(member_price_fen=2000)
    campaign = make_group_buy(price_fen=6000)
    svip, svip_api = shopper()
    plain, plain_api = shopper()
    _member(svip, svip=True)
    _member(plain, svip=False)
    confirmed, created = group_order(svip_api, group_sku, group_buy_id=campaign.pk)
    assert _priced(confirmed.json()) == (6000, 6000, 0, 0)
    assert created.status_code == 201 and created.json()["pay_fen"] == 6000
    confirmed, _ = group_order(plain_api, group_sku, group_buy_id=campaign.pk)
    assert _priced(confirmed.json()) == (6000, 6000, FREIGHT, 0)


def test_a_bargain_order_ships_free_for_svip(shopper, make_bargain, group_order, settings):
    settings.BARGAIN_HELPS_PER_DAY = 3
    campaign = make_bargain(original=10000, floor=5000, helpers=3)
    owner, owner_api = shopper()
    _member(owner, svip=True)
    bargain_no = owner_api.post(f"/api/v1/bargains/{campaign.pk}/start").json()["bargain_no"]
    for _ in range(3):
        assert shopper()[1].post(f"/api/v1/bargain-records/{bargain_no}/help").status_code == 201
    confirmed, created = group_order(owner_api, campaign.sku, bargain_no=bargain_no)
    assert _priced(confirmed.json()) == (5000, 5000, 0, 0)
    order = Order.objects.get(order_no=created.json()["order_no"])
    assert (order.freight_fen, order.member_fen, order.pay_fen) == (0, 0, 5000)


def test_points_of_a_flash_sale_order_are_doubled_for_svip(shopper, make_sale, flash_sku, buy, wechat_pay):
    customer, api = shopper()
    _member(customer, svip=True)
    sale = make_sale(price_fen=5000)
    address = customer.addresses.get()
    _, created = buy(api, sale, address=address)
    order_no = created.json()["order_no"]
    wechat_pay(api, order_no)
    order = Order.objects.get(order_no=order_no)
    assert (order.status, order.flash_sale_id, order.pay_fen) == ("paid", sale.pk, 5000)
    for pk in FollowUp.objects.filter(order=order, kind=FollowUp.Kind.POINTS_AWARD).values_list("pk", flat=True):
        followups.followup_execute(pk)
    award = WalletEvent.objects.get(customer=customer, kind="points", reason="award")
    assert award.amount == 50 * 2
