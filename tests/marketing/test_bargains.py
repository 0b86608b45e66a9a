"""砍价 through the API: start, help, cut exactly to the floor, buy once at the current price."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.catalog.models import Sku
from apps.marketing import bargains
from apps.marketing.models import BargainCampaign, BargainHelp, BargainRecord
from apps.orders.models import Order

pytestmark = pytest.mark.django_db


def test_start_is_one_open_record_and_public(shopper, make_bargain, make_api):
    campaign = make_bargain()
    _, api = shopper()
    first = api.post(f"/api/v1/bargains/{campaign.pk}/start")
    assert first.status_code == 201, first.json()
    record = first.json()
    assert (
        record["price_fen"],
        record["floor_price_fen"],
        record["helpers"],
        record["helpers_needed"],
        record["status"],
        record["helps"],
    ) == (10000, 5000, 0, 3, "open", [])
    again = api.post(f"/api/v1/bargains/{campaign.pk}/start")
    assert (again.status_code, again.json()["bargain_no"]) == (200, record["bargain_no"])
    anonymous = make_api(None)
    assert anonymous.get(f"/api/v1/bargain-records/{record['bargain_no']}").json()["bargain_no"] == record["bargain_no"]
    assert anonymous.post(f"/api/v1/bargains/{campaign.pk}/start").status_code == 401
    assert anonymous.get("/api/v1/bargain-records/B000").json()["code"] == "not_found"
    listed = anonymous.get("/api/v1/bargains?status=live").json()
    assert [c["id"] for c in listed] == [campaign.pk] and listed[0]["floor_price_fen"] == 5000
    assert anonymous.get("/api/v1/bargains?status=upcoming").json() == []
    assert api.post("/api/v1/bargains/999999/start").json()["code"] == "not_found"


def test_helps_cut_exactly_to_the_floor_then_buy_once(shopper, make_bargain, group_order, settings):
    settings.BARGAIN_HELPS_PER_DAY = 3
    campaign = make_bargain(original=10000, floor=5000, helpers=3, stock=5)
    owner, owner_api = shopper()
    bargain_no = owner_api.post(f"/api/v1/bargains/{campaign.pk}/start").json()["bargain_no"]
    own = owner_api.post(f"/api/v1/bargain-records/{bargain_no}/help")
    assert (own.status_code, own.json()["code"]) == (409, "invalid_state")
    cuts = []
    helpers = [shopper()[1] for _ in range(4)]
    for api in helpers[:3]:
        answer = api.post(f"/api/v1/bargain-records/{bargain_no}/help")
        assert answer.status_code == 201, answer.json()
        assert answer.json()["cut_fen"] >= 1
        cuts.append(answer.json()["cut_fen"])
    assert sum(cuts) == 5000 and answer.json()["price_fen"] == 5000
    twice = helpers[0].post(f"/api/v1/bargain-records/{bargain_no}/help")
    assert (twice.status_code, twice.json()["code"]) == (409, "limit_exceeded")
    floor = helpers[3].post(f"/api/v1/bargain-records/{bargain_no}/help")
    assert (floor.status_code, floor.json()["code"]) == (409, "invalid_state")
    record = owner_api.get(f"/api/v1/bargain-records/{bargain_no}").json()
    assert [h["cut_fen"] for h in record["helps"]] == cuts and record["helpers"] == 3

    # another customer cannot buy it; the owner buys it once at the floor price
    stranger, stranger_api = shopper()
    confirmed, _ = group_order(stranger_api, campaign.sku, bargain_no=bargain_no)
    assert confirmed.status_code == 404
    confirmed, created = group_order(owner_api, campaign.sku, bargain_no=bargain_no)
    assert created.status_code == 201, created.json()
    order = created.json()
    assert order["lines"][0]["price_fen"] == 5000 and order["goods_fen"] == 5000
    again, _ = group_order(owner_api, campaign.sku, bargain_no=bargain_no)
    assert (again.status_code, again.json()["code"]) == (409, "invalid_state")
    assert BargainRecord.objects.get(bargain_no=bargain_no).status == "bought"
    campaign.refresh_from_db()
    assert (campaign.stock, campaign.sold, Sku.objects.get(pk=campaign.sku_id).stock) == (4, 1, 19)
    # a cancelled order gives the record and the unit back (nothing was bought)
    assert owner_api.post(f"/api/v1/orders/{order['order_no']}/cancel").status_code == 200
    campaign.refresh_from_db()
    assert (campaign.stock, campaign.sold, Sku.objects.get(pk=campaign.sku_id).stock) == (5, 0, 20)
    assert BargainRecord.objects.get(bargain_no=bargain_no).status == "open"


def test_two_units_or_another_sku_are_refused(shopper, make_bargain, make_sku, group_order):
    campaign = make_bargain()
    _, api = shopper()
    bargain_no = api.post(f"/api/v1/bargains/{campaign.pk}/start").json()["bargain_no"]
    confirmed, _ = group_order(api, campaign.sku, quantity=2, bargain_no=bargain_no)
    assert (confirmed.status_code, confirmed.json()["code"]) == (400, "invalid")
    confirmed, _ = group_order(api, make_sku(), bargain_no=bargain_no)
    assert (confirmed.status_code, confirmed.json()["code"]) == (400, "invalid")


def test_daily_help_limit_per_shanghai_day(shopper, make_bargain, settings):
    settings.BARGAIN_HELPS_PER_DAY = 2
    campaign = make_bargain(helpers=5, hours=72, lasts=60 * 72)
    records = [shopper()[1].post(f"/api/v1/bargains/{campaign.pk}/start").json()["bargain_no"] for _ in range(3)]
    _, helper = shopper()
    assert [helper.post(f"/api/v1/bargain-records/{no}/help").status_code for no in records] == [201, 201, 409]
    assert helper.post(f"/api/v1/bargain-records/{records[2]}/help").json()["code"] == "limit_exceeded"
    tomorrow = timezone.now() + dt.timedelta(days=1)
    customer_id = BargainHelp.objects.first().helper_id
    assert bargains.bargain_help(bargain_no=records[2], helper_id=customer_id, now=tomorrow)["cut_fen"] >= 1


def test_expiry_closes_the_record_and_start_again_makes_a_new_one(shopper, make_bargain):
    campaign = make_bargain(hours=1)
    owner, api = shopper()
    first = api.post(f"/api/v1/bargains/{campaign.pk}/start").json()["bargain_no"]
    later = timezone.now() + dt.timedelta(hours=1, seconds=1)
    assert bargains.bargains_expire_due(now=later) == 1
    assert bargains.bargains_expire_due(now=later) == 0  # a second run finds nothing
    assert BargainRecord.objects.get(bargain_no=first).status == "expired"
    _, helper = shopper()
    refused = helper.post(f"/api/v1/bargain-records/{first}/help")
    assert (refused.status_code, refused.json()["code"]) == (409, "invalid_state")
    second = api.post(f"/api/v1/bargains/{campaign.pk}/start")
    assert second.status_code == 201 and second.json()["bargain_no"] != first


def test_limit_per_customer_counts_bought_records(shopper, make_bargain, group_order):
    campaign = make_bargain(limit=1, helpers=1, original=200, floor=100)
    _, api = shopper()
    bargain_no = api.post(f"/api/v1/bargains/{campaign.pk}/start").json()["bargain_no"]
    _, created = group_order(api, campaign.sku, bargain_no=bargain_no)
    assert created.status_code == 201
    refused = api.post(f"/api/v1/bargains/{campaign.pk}/start")
    assert (refused.status_code, refused.json()["code"]) == (409, "limit_exceeded")
    assert Order.objects.filter(bargain__bargain_no=bargain_no).count() == 1
    assert BargainCampaign.objects.get(pk=campaign.pk).sold == 1


def test_cut_rule_leaves_a_fen_for_every_later_help():
    for _ in range(200):
        price, helpers = 1000, 0
        while helpers < 10:
            cut = bargains.bargain_cut(price_fen=price, floor_fen=990, helpers=helpers, helpers_needed=10)
            assert cut >= 1
            price -= cut
            helpers += 1
            assert price - 990 >= 10 - helpers
        assert price == 990
