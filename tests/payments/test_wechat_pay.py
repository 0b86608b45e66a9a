"""WeChat Pay end to end through the sandbox: prepay, notification (verified, idempotent), query."""

import datetime as dt

import pytest
from django.conf import settings
from django.utils import timezone
from pay_helpers import API_KEY, notify, pay_result
from wechatpy.pay.utils import calculate_signature

from apps.catalog.models import Product
from apps.orders.models import FollowUp, Order, OrderEvent
from apps.payments.models import Notification, Payment

pytestmark = pytest.mark.django_db


@pytest.fixture
def order(api, make_sku, address, place_order):
    return place_order(api, items=[(make_sku(price_fen=3600, stock=10), 3)], address=address)


def test_pay_wechat_returns_signed_request_payment_params(api, order, wechat):
    response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    assert response.status_code == 200
    params = response.json()["pay_params"]
    assert set(params) == {"appId", "timeStamp", "nonceStr", "package", "signType", "paySign"}
    assert params["signType"] == "MD5"
    unsigned = {k: v for k, v in params.items() if k != "paySign"}
    assert params["paySign"] == calculate_signature(unsigned, API_KEY)
    trade = wechat.state.trades[order["order_no"]]
    assert params["package"] == f"prepay_id={trade.prepay_id}"
    assert trade.total_fee == order["pay_fen"] == 3600 * 3  # 108 yuan: free freight
    assert trade.notify_url == "http://127.0.0.1:8000/api/v1/payments/wechat/notify"
    again = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json").json()
    assert again["pay_params"]["package"] == params["package"]  # prepay_id reused
    assert Payment.objects.filter(order__order_no=order["order_no"]).count() == 1


def test_notification_pays_once_and_duplicates_change_nothing(api, order, wechat, deliver, queued):
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    trade, notification = wechat.control.pay(order["order_no"]), None
    attempts = deliver()
    assert [a["ok"] for a in attempts] == [True]
    row = Order.objects.get(order_no=order["order_no"])
    assert row.status == "paid" and row.pay_method == "wechat" and row.paid_at is not None
    payment = Payment.objects.get(out_trade_no=order["order_no"])
    assert payment.status == "paid" and payment.transaction_id == trade["transaction_id"]
    assert Product.objects.get(pk=row.lines.get().product_id).sales == 3
    assert FollowUp.objects.filter(order=row).count() == 3  # message, SMS, points
    assert queued("followups") == ["apps.orders.tasks.followup_run_many"]  # one message for the three
    assert _queued_args("followups") == [[sorted(FollowUp.objects.filter(order=row).values_list("pk", flat=True))]]

    notification = wechat.control.notifications()[0]
    for _ in range(3):  # WeChat re-sends, possibly from several servers
        assert [a["ok"] for a in deliver(notification["id"])] == [True]
    assert Product.objects.get(pk=row.lines.get().product_id).sales == 3
    assert FollowUp.objects.filter(order=row).count() == 3  # message, SMS, points
    assert len(queued("followups")) == 1
    assert OrderEvent.objects.filter(order=row, to_status="paid").count() == 1
    assert list(Notification.objects.order_by("id").values_list("outcome", flat=True)) == [
        "applied",
        "duplicate",
        "duplicate",
        "duplicate",
    ]


@pytest.mark.parametrize(
    "changes, key, outcome",
    [
        ({}, "0" * 32, "bad_signature"),  # signed with another key
        ({"total_fee": "1"}, API_KEY, "amount_mismatch"),  # signed, but not what we asked for
        ({"appid": "wx0000000000000000"}, API_KEY, "bad_fields"),
        ({"mch_id": "1234567890"}, API_KEY, "bad_fields"),
        ({"result_code": "FAIL"}, API_KEY, "bad_fields"),
        ({"out_trade_no": "20990101000000000000"}, API_KEY, "unknown_order"),
    ],
)
def test_notification_rejected_leaves_order_unpaid(api, order, client, changes, key, outcome):
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    response = notify(client, pay_result(order["order_no"], order["pay_fen"], **changes), key=key)
    assert response.status_code == 200
    assert b"<return_code><![CDATA[FAIL]]></return_code>" in response.content
    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"
    assert Payment.objects.get(out_trade_no=order["order_no"]).status == "pending"
    assert list(Notification.objects.values_list("outcome", flat=True)) == [outcome]
    assert FollowUp.objects.count() == 0


def test_notification_with_extra_fields_is_verified_over_exactly_what_came(api, order, client):
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    fields = pay_result(
        order["order_no"],
        order["pay_fen"],
        coupon_fee="100",
        coupon_count="1",
        coupon_id_0="2000000001",
        coupon_fee_0="100",
        cash_fee=str(order["pay_fen"] - 100),
        settlement_total_fee=str(order["pay_fen"]),
        attach="",
    )
    response = notify(client, fields)
    assert b"SUCCESS" in response.content
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"


@pytest.mark.parametrize(
    "body",
    [
        b'<?xml version="1.0"?><!DOCTYPE xml [<!ENTITY x SYSTEM "file:///etc/passwd">]><xml><a>&x;</a></xml>',
        b'<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]><xml><a>&lol2;</a></xml>',
        b"<xml><return_code>SUCCESS</return_code>",  # truncated
        b"not xml at all",
        b"<xml><nested><a>1</a></nested></xml>",
        b"",
    ],
)
def test_notification_malformed_or_hostile_xml_is_fail(client, body):
    response = client.post("/api/v1/payments/wechat/notify", data=body, content_type="text/xml")
    assert response.status_code == 200
    assert b"FAIL" in response.content
    assert list(Notification.objects.values_list("outcome", flat=True)) == ["malformed"]


def test_notify_endpoint_needs_post(client):
    assert client.get("/api/v1/payments/wechat/notify").status_code == 405


def test_pay_status_asks_wechat_when_notification_is_lost(api, order, wechat):
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    assert api.get(f"/api/v1/orders/{order['order_no']}/pay-status").json() == {
        "order_status": "unpaid",
        "payment_status": "pending",
        "refund_status": None,
        "message": "待支付",
    }
    wechat.control.pay(order["order_no"])  # paid, notification not delivered
    # pay-status asks WeChat at most once per PAY_STATUS_QUERY_INTERVAL_SECONDS: let that pass.
    Payment.objects.filter(out_trade_no=order["order_no"]).update(
        status_queried_at=timezone.now() - dt.timedelta(seconds=settings.PAY_STATUS_QUERY_INTERVAL_SECONDS)
    )
    assert api.get(f"/api/v1/orders/{order['order_no']}/pay-status").json() == {
        "order_status": "paid",
        "payment_status": "paid",
        "refund_status": None,
        "message": "支付成功",
    }
    assert (
        Payment.objects.get(out_trade_no=order["order_no"]).transaction_id
        == wechat.state.trades[order["order_no"]].transaction_id
    )


def test_pay_after_deadline_or_cancel_is_409(api, order):
    Order.objects.filter(order_no=order["order_no"]).update(pay_deadline="2020-01-01T00:00:00+08:00")
    response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    assert response.status_code == 409 and response.json()["code"] == "invalid_state"


def test_pay_when_wechat_is_down_is_503_and_retry_works(api, order, settings, wechat):
    settings.WECHAT_PAY_API_BASE = "http://127.0.0.1:9/"
    response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    assert response.status_code == 503 and response.json()["code"] == "wechat_unavailable"
    settings.WECHAT_PAY_API_BASE = wechat.url
    response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    assert response.status_code == 200
    assert wechat.state.trades[order["order_no"]].total_fee == order["pay_fen"]


def test_wechat_body_is_the_shop_name_then_the_first_line_within_128_characters(
    api, address, make_sku, place_order, settings
):
    from apps.orders.models import Order
    from apps.payments.services import _body

    settings.SHOP_NAME = "青瓷小铺"
    short = place_order(api, items=[(make_sku(name="青瓷盖碗"), 1), (make_sku(name="茶盘"), 1)], address=address)
    assert _body(Order.objects.get(order_no=short["order_no"])) == "青瓷小铺-青瓷盖碗 等"
    settings.SHOP_NAME = "青瓷小铺" * 10  # 40 characters; a product name may have 100
    long = place_order(api, items=[(make_sku(name="长" * 100), 1)], address=address)
    body = _body(Order.objects.get(order_no=long["order_no"]))
    assert len(body) == 128
    assert body == "青瓷小铺" * 10 + "-" + "长" * 87


def _queued_args(queue: str) -> list:
    """The arguments of the messages waiting on a Celery queue, oldest first (ids sorted)."""
    import base64
    import json

    from django_redis import get_redis_connection

    from tests.conftest import queue_names

    r = get_redis_connection("default")
    name = next(q for q in queue_names() if q == queue or q.endswith("-" + queue))
    out = []
    for raw in reversed(r.lrange(name, 0, -1)):
        args = json.loads(base64.b64decode(json.loads(raw)["body"]))[0]
        out.append([sorted(a) if isinstance(a, list) else a for a in args])
    return out
