"""docs/TRY.md's buying path works on any day of the year.

The shop is prepared by ``manage.py runshop --prepare-only`` (what ``make run`` does: migrate,
the demo data, slots, the almanac) at several fixed "today"s — the clock moved as the suite does
elsewhere (``django.utils.timezone.now``, and the WeChat sandbox's own clock with it), days
chosen where no day 2..7 days ahead is good for 出行 as well as ordinary ones — and then
TRY.md's steps run through Django's test client with TRY.md's paths and parameters: login,
browse, a goods order paid with WeChat, the consultation on the first 宜出行 day at least 2 days
ahead paid from the balance and refunded, the activities by name, ``?tag=hot``. The snippets
this test mirrors are checked to be in TRY.md, so the two cannot drift apart unnoticed.
"""

import datetime as dt
import io
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts import subscriptions
from apps.accounts.models import SubscribeTemplate
from apps.payments import refunds
from apps.payments.models import Refund

pytestmark = pytest.mark.django_db

TRY = (Path(settings.BASE_DIR) / "docs" / "TRY.md").read_text()
TRAVEL = "%E5%87%BA%E8%A1%8C"  # 出行, percent-encoded as TRY.md sends it
SHANGHAI = dt.timezone(dt.timedelta(hours=8))

# What TRY.md says, word for word, for each request this test makes.
MIRRORED = [
    """-d '{"openid":"oDemoCustomer0000000000000001"}' | json '["code"]')""",
    """curl -s $A/products; curl -s $A/products/1; curl -s $A/teachers""",
    """curl -s "$A/teachers/1/slots?from=$(TZ=Asia/Shanghai date +%F)\"""",
    """curl -s "$A/me/coupons?status=usable" -H "$H" | json '["results"][0]["id"]')""",
    """-d "{\\"items\\":[{\\"sku_id\\":1,\\"quantity\\":1},{\\"sku_id\\":9,\\"quantity\\":2}],\\"address_id\\":1,"""
    """\\"coupon_id\\":$COUPON,\\"use_points\\":100}\"""",
    """curl -s -XPOST $A/orders/$NO/pay -H "$H" -H "$J" -d '{"method":"wechat"}'""",
    """curl -s -XPOST $S/pay -H "$J" -d "{\\"out_trade_no\\":\\"$NO\\"}\"""",
    """FROM=$(TZ=Asia/Shanghai date -d '+2 days' +%F); TO=$(TZ=Asia/Shanghai date -d '+30 days' +%F)""",
    f"""curl -s "$A/almanac/search?activity={TRAVEL}&start=$FROM&days=29\"""",
    f"""SLOT=$(curl -s "$A/teachers/1/slots?from=$FROM&to=$TO&good_for={TRAVEL}" | free)""",
    """-d "{\\"items\\":[{\\"sku_id\\":23,\\"quantity\\":1}],\\"slot_id\\":$SLOT}" | json '["order_key"]')""",
    """CNO=$(curl -s -XPOST $A/orders -H "$H" -H "$J" -d "{\\"order_key\\":\\"$KEY\\"}" | json '["order_no"]')""",
    """curl -s -XPOST $A/orders/$CNO/pay -H "$H" -H "$J" -d '{"method":"balance"}'\n""",
    """curl -s -XPOST $A/orders/$CNO/refund -H "$H" -H "$J" -d '{"reason":"时间有变"}'""",
    """公道杯·两人拼团: 手工公道杯 高硼硅玻璃, 68.00 -> 48.00 yuan""",
    """沉香线香·好友砍价: 海南沉香线香\n50支装, 59.00 -> 19.00 yuan in 3 helps""",
    """GB=$(curl -s "$A/group-buys?status=live" | json '[0]["id"]')""",
    """BG=$(curl -s "$A/bargains?status=live" | json '[0]["id"]')""",
    """curl -s "$A/products?sort=-price&tag=hot\"""",
]

# Fixed "today"s (Shanghai wall time): the first four have no day good for 出行 2..7 days
# ahead (lunar-python 1.4.8), the last is an ordinary day, one is late in the evening.
TODAYS = [
    dt.datetime(2026, 12, 7, 10, 30),
    dt.datetime(2027, 1, 25, 23, 40),
    dt.datetime(2027, 5, 26, 8, 0),
    dt.datetime(2027, 12, 2, 15, 10),
    dt.datetime(2027, 3, 15, 12, 0),
]


def test_try_md_has_every_step_this_test_mirrors():
    missing = [snippet for snippet in MIRRORED if snippet not in TRY]
    assert missing == []


@pytest.fixture
def shop_at(monkeypatch, wechat, media, settings):
    """``shop_at(wall)``: the clock moved to ``wall`` (Shanghai) and running on from there, for
    the shop and the WeChat sandbox; then the shop prepared as ``make run`` prepares it."""
    real_now = timezone.now

    def prepare(wall: dt.datetime) -> None:
        offset = wall.replace(tzinfo=SHANGHAI) - real_now()
        monkeypatch.setattr(timezone, "now", lambda: real_now() + offset)
        clock = wechat.state.clock
        monkeypatch.setattr(wechat.state, "clock", lambda: clock() + offset.total_seconds())
        monkeypatch.setenv("STARMALL_ROLES", "worker")  # no web: no collectstatic into the tree
        call_command("runshop", prepare_only=True, stdout=io.StringIO())

    return prepare


def _ok(response, status: int = 200):
    assert response.status_code == status, (response.status_code, response.content[:500])
    return response.json()


@pytest.mark.parametrize("wall", TODAYS, ids=[d.strftime("%Y-%m-%d") for d in TODAYS])
def test_the_buying_path_of_try_md_works_that_day(shop_at, wechat, deliver, wall):
    shop_at(wall)
    today = timezone.localdate()
    assert today == wall.date()
    public = APIClient()

    # 1. wx.login -> code -> token
    code = wechat.control.login_code("oDemoCustomer0000000000000001")["code"]
    token = _ok(public.post("/api/v1/auth/wechat/login", {"code": code}, format="json"))["token"]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")

    # 2. browse
    assert (
        _ok(public.get("/api/v1/products"))["count"] == 13
    )  # 12 of demo.json and the 30-minute service (seed_booking)
    assert _ok(public.get("/api/v1/products/1"))["name"] == "青瓷盖碗"
    assert [t["id"] for t in _ok(public.get("/api/v1/teachers"))] == [1, 2]
    slots_today_on = _ok(public.get(f"/api/v1/teachers/1/slots?from={today}"))
    assert len(slots_today_on) >= 6 * 7  # today .. today + 7, six a day

    _goods_paid_with_wechat(api, wechat, deliver)  # 3.
    _consultation_on_a_good_day_and_its_refund(api, public, today)  # 4. and 5.
    _activities_by_name_and_hot_products(public)


def _goods_paid_with_wechat(api, wechat, deliver) -> None:
    """Step 3: confirm -> create -> pay with WeChat -> the user pays (the sandbox) -> paid."""
    coupon = _ok(api.get("/api/v1/me/coupons?status=usable"))["results"][0]
    assert coupon["name"] == "新人满100减20"
    body = {
        "items": [{"sku_id": 1, "quantity": 1}, {"sku_id": 9, "quantity": 2}],
        "address_id": 1,
        "coupon_id": coupon["id"],
        "use_points": 100,
    }
    draft = _ok(api.post("/api/v1/orders/confirm", body, format="json"))
    assert (draft["goods_fen"], draft["coupon_fen"], draft["delivery"]) == (12800 + 2 * 6800, 2000, "express")
    order = _ok(api.post("/api/v1/orders", {"order_key": draft["order_key"]}, format="json"), 201)
    no = order["order_no"]
    assert _ok(api.post(f"/api/v1/orders/{no}/pay", {"method": "wechat"}, format="json"))["pay_params"]
    wechat.control.pay(no)
    assert [a["ok"] for a in deliver()] == [True]
    status = _ok(api.get(f"/api/v1/orders/{no}/pay-status"))
    assert (status["order_status"], status["payment_status"]) == ("paid", "paid")


def _consultation_on_a_good_day_and_its_refund(api, public, today: dt.date) -> None:
    """Steps 4 and 5: the first free slot on a 宜出行 day at least 2 days ahead, paid
    from the balance; its refund (more than 24 h ahead) approved at once, back to the balance."""
    start, end = today + dt.timedelta(days=2), today + dt.timedelta(days=30)
    good = _ok(public.get(f"/api/v1/almanac/search?activity={TRAVEL}&start={start}&days=29"))["results"]
    assert good, "no day good for 出行 in 29 days"
    slots = _ok(public.get(f"/api/v1/teachers/1/slots?from={start}&to={end}&good_for={TRAVEL}"))
    slot = next(s for s in slots if s["available"])  # TRY.md's free()
    # on a 宜出行 day the teacher works (the first teacher is off on Sundays)
    assert timezone.localtime(dt.datetime.fromisoformat(slot["start"])).date().isoformat() in {g["date"] for g in good}
    body = {"items": [{"sku_id": 23, "quantity": 1}], "slot_id": slot["id"]}
    draft = _ok(api.post("/api/v1/orders/confirm", body, format="json"))
    assert (draft["delivery"], draft["address"], draft["pay_fen"]) == (None, None, 29900)
    booked = _ok(api.post("/api/v1/orders", {"order_key": draft["order_key"]}, format="json"), 201)
    no = booked["order_no"]
    paid = _ok(api.post(f"/api/v1/orders/{no}/pay", {"method": "balance"}, format="json"))
    assert (paid["order"]["status"], paid["order"]["slot"]["id"]) == ("paid", slot["id"])
    assert _ok(api.get("/api/v1/me"))["balance_fen"] == 100000 - 29900

    refund = _ok(api.post(f"/api/v1/orders/{no}/refund", {"reason": "时间有变"}, format="json"), 202)
    assert (refund["status"], refund["amount_fen"]) == ("approved", 29900)
    [queued] = Refund.objects.filter(order__order_no=no)
    assert refunds.refund_execute(refund_id=queued.pk) == "success"  # the worker's part
    status = _ok(api.get(f"/api/v1/orders/{no}/pay-status"))
    assert (status["order_status"], status["refund_status"]) == ("refunded", "success")
    assert _ok(api.get("/api/v1/me"))["balance_fen"] == 100000


def _activities_by_name_and_hot_products(public) -> None:
    """The 拼团 and 砍价 TRY.md names, with its prices, and ``?tag=hot`` listing something."""
    [group_buy] = _ok(public.get("/api/v1/group-buys?status=live"))
    shown = (group_buy["title"], group_buy["name"], group_buy["price_fen"], group_buy["original_price_fen"])
    assert shown == ("公道杯·两人拼团", "手工公道杯", 4800, 6800)
    [bargain] = _ok(public.get("/api/v1/bargains?status=live"))
    shown = (bargain["title"], bargain["name"], bargain["original_price_fen"], bargain["floor_price_fen"])
    assert shown == ("沉香线香·好友砍价", "海南沉香线香", 5900, 1900)
    hot = _ok(public.get("/api/v1/products?sort=-price&tag=hot"))["results"]
    assert [p["name"] for p in hot] == ["建盏·油滴天目", "青瓷盖碗", "海南沉香线香"]


def test_demo_subscription_templates_take_their_ids_from_the_settings(settings):
    settings.WECHAT_SUBSCRIBE_TEMPLATE_PAID = "tmpl-paid-of-this-shop"
    settings.WECHAT_SUBSCRIBE_TEMPLATE_CHAT = "tmpl-chat-of-this-shop"
    call_command("seed_subscribe_templates", stdout=io.StringIO())
    stored = dict(SubscribeTemplate.objects.values_list("kind", "template_id"))
    assert stored == {kind: getattr(settings, setting) for kind, (_, setting, _) in subscriptions.DEFAULTS.items()}
    assert stored[SubscribeTemplate.Kind.ORDER_PAID] == "tmpl-paid-of-this-shop"
    shown = _ok(APIClient().get("/api/v1/subscribe-templates?scene=consultation"))
    assert "tmpl-chat-of-this-shop" in [t["template_id"] for t in shown]
