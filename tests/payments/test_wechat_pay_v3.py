"""WeChat Pay API v3 end to end through the sandbox: JSAPI prepay and its RSA pay_params, the
signed and encrypted notification (verified, applied once, refused when anything is off),
query and close before a cancel, a payment keeping its api after a switch."""

import base64
import datetime as dt
import json

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from django.utils import timezone
from v3_helpers import KEYS, V3_NOTIFY, envelope, headers_for, post_v3, transaction

from apps.catalog.models import Product
from apps.orders.models import FollowUp, Order, OrderEvent
from apps.payments.models import Notification, Payment

pytestmark = pytest.mark.django_db


@pytest.fixture
def order(api, make_sku, address, place_order):
    return place_order(api, items=[(make_sku(price_fen=3600, stock=10, name="青瓷盖碗" * 25), 3)], address=address)


def pay(api, order_no):
    response = api.post(f"/api/v1/orders/{order_no}/pay", {"method": "wechat"}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()["pay_params"]


def test_v3_prepay_params_verify_with_the_merchant_public_key(api, order, wechat, v3pay):
    params = pay(api, order["order_no"])
    assert set(params) == {"appId", "timeStamp", "nonceStr", "package", "signType", "paySign"}
    assert params["signType"] == "RSA" and params["appId"] == "wx8d5f3c1a2b4e6f70"
    public = serialization.load_pem_public_key((KEYS / "merchant_public.pem").read_bytes())
    message = f"{params['appId']}\n{params['timeStamp']}\n{params['nonceStr']}\n{params['package']}\n"
    public.verify(base64.b64decode(params["paySign"]), message.encode(), padding.PKCS1v15(), hashes.SHA256())
    trade = wechat.state.trades[order["order_no"]]
    row = Order.objects.get(order_no=order["order_no"])
    assert trade.api == "v3" and params["package"] == f"prepay_id={trade.prepay_id}"
    assert trade.total_fee == row.pay_fen == 10800
    assert trade.notify_url == "http://127.0.0.1:8000/api/v1/payments/wechat/v3/notify"
    assert len(trade.params["body"].encode()) <= 127 and trade.params["body"].startswith("星商城-")
    deadline = timezone.localtime(row.pay_deadline).replace(microsecond=0)
    assert trade.params["time_expire"] == deadline.strftime("%Y%m%d%H%M%S")
    assert Payment.objects.get(out_trade_no=order["order_no"]).api == "v3"
    again = pay(api, order["order_no"])
    assert again["package"] == params["package"]  # prepay_id reused
    assert wechat.state.api_calls["v3/pay/transactions/jsapi"] == 1


def test_v3_notification_pays_once_and_copies_answer_204(api, order, wechat, v3pay, client, queued):
    pay(api, order["order_no"])
    wechat.control.pay(order["order_no"])
    assert [(a["status"], a["ok"]) for a in v3pay.deliver()] == [(204, True)]
    row = Order.objects.get(order_no=order["order_no"])
    payment = Payment.objects.get(out_trade_no=order["order_no"])
    trade = wechat.state.trades[order["order_no"]]
    assert row.status == "paid" and row.pay_method == "wechat"
    assert payment.status == "paid" and payment.transaction_id == trade.transaction_id
    assert timezone.localtime(payment.paid_at).strftime("%Y%m%d%H%M%S") == trade.time_end
    assert payment.updated_at > payment.created_at  # the conditional UPDATE that paid it moved 更新时间
    assert Product.objects.get(pk=row.lines.get().product_id).sales == 3
    assert FollowUp.objects.filter(order=row).count() == 3
    note = v3pay.state.delivered[0]
    for _ in range(3):  # WeChat sends it again, possibly from several servers
        assert v3pay.resend(note) == (204, "")
    assert Product.objects.get(pk=row.lines.get().product_id).sales == 3
    assert FollowUp.objects.filter(order=row).count() == 3
    assert len(queued("followups")) == 1
    assert OrderEvent.objects.filter(order=row, to_status="paid").count() == 1
    rows = list(Notification.objects.order_by("id").values_list("kind", "out_trade_no", "total_fee", "outcome"))
    assert (
        rows
        == [("payment", order["order_no"], 10800, "applied")] + [("payment", order["order_no"], 10800, "duplicate")] * 3
    )


def _refused(client, body, headers):
    response = post_v3(client, body, headers)
    assert 400 <= response.status_code < 500
    answer = response.json()
    assert answer["code"] == "FAIL" and any("\u4e00" <= ch <= "\u9fff" for ch in answer["message"])
    return answer["message"]


@pytest.mark.parametrize(
    "case, message, outcome",
    [
        ("forged", "签名验证失败", "bad_signature"),
        ("stale", "签名验证失败", "bad_signature"),
        ("serial", "签名验证失败", "bad_signature"),
        ("tampered", "通知内容无法解密", "malformed"),
        ("amount", "订单金额不符", "amount_mismatch"),
        ("payer_total", "订单金额不符", "amount_mismatch"),
        ("appid", "通知的 appid、商户号或支付结果不符", "bad_fields"),
        ("unknown", "商户订单号不存在", "unknown_order"),
        ("refund_type", "无法识别的通知", "bad_fields"),
    ],
)
def test_v3_notification_refused_changes_nothing(api, order, v3pay, client, case, message, outcome):
    from cryptography.hazmat.primitives.asymmetric import rsa

    pay(api, order["order_no"])
    no, total = order["order_no"], 10800
    resource = {
        "amount": transaction(no, total + 1),
        "payer_total": transaction(no, total + 1, amount={"total": total + 1, "payer_total": total}),
        "appid": transaction(no, total, appid="wx0000000000000000"),
        "unknown": transaction("20990101000000000", total),
    }.get(case, transaction(no, total))
    body = envelope(resource, original_type="refund" if case == "refund_type" else "transaction")
    headers = headers_for(body)
    if case == "forged":
        headers = headers_for(body, key=rsa.generate_private_key(public_exponent=65537, key_size=2048))
    elif case == "stale":
        headers = headers_for(body, timestamp=int(timezone.now().timestamp()) - 6 * 60)
    elif case == "serial":
        headers = headers_for(body, serial="PUB_KEY_ID_0000000000000000000000000000")
    elif case == "tampered":
        envelope_ = json.loads(body)
        cipher = bytearray(base64.b64decode(envelope_["resource"]["ciphertext"]))
        cipher[5] ^= 1
        envelope_["resource"]["ciphertext"] = base64.b64encode(bytes(cipher)).decode()
        body = json.dumps(envelope_)
        headers = headers_for(body)  # WeChat's signature is fine; the resource is not
    assert _refused(client, body, headers) == message
    assert Order.objects.get(order_no=no).status == "unpaid"
    payment = Payment.objects.get(out_trade_no=no)
    assert payment.status == "pending" and payment.transaction_id is None
    assert list(Notification.objects.values_list("outcome", flat=True)) == [outcome]


def test_v3_cancel_asks_and_closes_through_v3(api, order, wechat, v3pay):
    pay(api, order["order_no"])
    response = api.post(f"/api/v1/orders/{order['order_no']}/cancel", format="json")
    assert response.status_code == 200, response.json()
    assert Order.objects.get(order_no=order["order_no"]).status == "cancelled"
    assert wechat.state.trades[order["order_no"]].trade_state == "CLOSED"
    assert Payment.objects.get(out_trade_no=order["order_no"]).status == "closed"
    calls = wechat.state.api_calls
    assert calls["v3/pay/transactions/out-trade-no/{no}"] == 1  # asked first
    assert calls["v3/pay/transactions/out-trade-no/{no}/close"] == 1  # then closed
    assert "pay/orderquery" not in calls and "pay/closeorder" not in calls


def test_v3_unpaid_timeout_finds_a_lost_payment_by_query(api, order, wechat, v3pay):
    from apps.payments import order_lifecycle

    pay(api, order["order_no"])
    wechat.control.pay(order["order_no"])  # the notification is lost (never delivered)
    later = timezone.now() + dt.timedelta(hours=1)
    assert order_lifecycle.order_expire(order_id=Order.objects.get(order_no=order["order_no"]).pk, now=later) == "paid"
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"
    assert wechat.state.trades[order["order_no"]].trade_state == "SUCCESS"


def test_a_payment_keeps_its_api_after_the_switch(api, order, wechat, settings, deliver):
    pay(api, order["order_no"])  # v2 (the default)
    settings.WECHAT_PAY_API = "v3"
    settings.WECHAT_PAY_V3_API_BASE = wechat.url.rstrip("/")
    again = pay(api, order["order_no"])
    assert again["signType"] == "MD5"  # the open v2 payment goes on under v2
    wechat.control.pay(order["order_no"])
    assert [a["ok"] for a in deliver()] == [True]
    assert Payment.objects.get(out_trade_no=order["order_no"]).api == "v2"
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"


def test_v3_notify_answers_json_for_a_body_that_is_not_json(client, v3pay):
    response = client.post(V3_NOTIFY, data=b"<xml/>", content_type="application/json")
    assert response.status_code == 400 and response.json()["code"] == "FAIL"
    assert Notification.objects.get().outcome == "bad_signature"


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_racing_v3_notifications_are_applied_once(api, order, wechat, v3pay, race):
    from apps.payments import notifications

    pay(api, order["order_no"])
    wechat.control.pay(order["order_no"])
    note = v3pay.state.pending[0]  # the same delivery arriving from several WeChat servers at once
    body, headers = note["body"].encode(), dict(note["headers"])
    answers = race(lambda i: notifications.notification_handle(notifications.PAY_RESULT_V3, body, headers), 8)
    assert [(a.status, a.body) for a in answers] == [(204, b"")] * 8
    row = Order.objects.get(order_no=order["order_no"])
    assert row.status == "paid"
    assert Payment.objects.get(out_trade_no=order["order_no"]).status == "paid"
    assert Product.objects.get(pk=row.lines.get().product_id).sales == 3
    assert FollowUp.objects.filter(order=row).count() == 3
    assert OrderEvent.objects.filter(order=row, to_status="paid").count() == 1
    outcomes = sorted(Notification.objects.values_list("outcome", flat=True))
    assert outcomes == ["applied"] + ["duplicate"] * 7


def test_v3_pay_status_finds_a_lost_notification_by_query(api, order, wechat, v3pay):
    pay(api, order["order_no"])
    wechat.control.pay(order["order_no"])  # the notification never arrives
    answer = api.get(f"/api/v1/orders/{order['order_no']}/pay-status").json()
    assert (answer["order_status"], answer["payment_status"]) == ("paid", "paid")
    assert wechat.state.api_calls["v3/pay/transactions/out-trade-no/{no}"] == 1
    assert "pay/orderquery" not in wechat.state.api_calls


def test_v3_unanswered_prepay_is_unknown_then_checked_through_v3(api, order, wechat, v3pay, settings):
    from apps.payments import services

    settings.WECHAT_PAY_V3_API_BASE = "http://127.0.0.1:9"  # nothing listens: no answer
    response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    assert response.status_code == 503 and response.json()["code"] == "wechat_unavailable"
    payment = Payment.objects.get(out_trade_no=order["order_no"])
    assert (payment.status, payment.api) == ("unknown", "v3")
    settings.WECHAT_PAY_V3_API_BASE = wechat.url.rstrip("/")  # WeChat answers again: it never saw it
    assert services.payment_check_uncertain(payment=payment) == "clear"
    assert Payment.objects.get(pk=payment.pk).status == "pending"
    assert wechat.state.api_calls["v3/pay/transactions/out-trade-no/{no}"] == 1
    assert pay(api, order["order_no"])["signType"] == "RSA"  # a new prepay after the clear answer


def test_the_schema_serves_the_v3_notify_urls_and_oversized_bodies_are_413(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    for path in (V3_NOTIFY, "/api/v1/payments/wechat/v3/refund-notify"):
        assert {"204", "400", "413"} <= set(schema["paths"][path]["post"]["responses"]), path
        assert schema["paths"][path]["post"].get("security", [{}]) == [{}]  # no token: WeChat signs
        big = client.post(path, data=b"{" + b" " * (64 * 1024) + b"}", content_type="application/json")
        assert big.status_code == 413 and big.json() == {"code": "FAIL", "message": "通知内容过大", "detail": {}}
        assert client.get(path).status_code == 405
    assert Notification.objects.count() == 0  # an oversized body is only counted


@pytest.mark.parametrize("path", [V3_NOTIFY, "/api/v1/payments/wechat/v3/refund-notify"])
def test_the_notify_gate_leaves_v3_notifications_to_django(path):
    from starmall.gates.payment_notify import PaymentNotifyGate
    from tests.orders.test_create_gate import run
    from tests.orders.test_soldout_gate import Inner

    body = envelope(transaction("2026120600000000001", 10800))  # no such payment
    inner = Inner()
    headers = {"Host": "127.0.0.1:8000", "Content-Type": "application/json", **headers_for(body)}
    # run, not call: the gate now asks PostgreSQL about a v3 first delivery, and its pool is
    # closed with the loop (tests/payments/test_notify_gate_v3.py: what the gate answers itself).
    run(PaymentNotifyGate(inner), [(body.encode(), headers)], path=path)
    assert inner.bodies == [body.encode()]  # passed on untouched: Django answers it
