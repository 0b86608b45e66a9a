"""Attacks on the WeChat Pay notification endpoints (payment and refund).

API.md: answer SUCCESS once handled (duplicates too), FAIL for a bad signature or an
unparsable body — always HTTP 200 with XML, never a 500 (WeChat would retry for 24 h and the
Notification audit row would be lost). DESIGN.md flow 5: safe parse, signature over exactly
the fields received, appid/mch_id/result_code, ``total_fee == pay_fen``.
"""

from __future__ import annotations

import hashlib
import hmac

import pytest
from adv_helpers import (
    assert_conserved,
    is_ack_fail,
    is_ack_success,
    notify_fields,
    post_notify,
    sign,
    signed_body,
    xml_of,
)
from django.conf import settings

from apps.accounts.models import Customer
from apps.orders.models import FollowUp, Order
from apps.payments.models import Notification, Payment, Refund

pytestmark = pytest.mark.django_db

PRICE = 3600  # x3 = 10800 fen: free freight


@pytest.fixture
def sku(make_sku):
    return make_sku(price_fen=PRICE, stock=10)


@pytest.fixture
def wx_order(shopper, sku, place_order):
    """An unpaid goods order (10800 fen) whose WeChat payment was started."""
    customer, api, address = shopper()
    order = place_order(api, items=[(sku, 3)], address=address)
    assert api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json").status_code == 200
    order["api"], order["customer"] = api, customer
    return order


def _state(order_no):
    return (
        Order.objects.get(order_no=order_no).status,
        Payment.objects.filter(order__order_no=order_no).values_list("status", flat=True).first(),
    )


# --- never a 500, always a recorded FAIL ------------------------------------------------------


@pytest.mark.parametrize(
    "total_fee",
    [
        "²",  # str.isdigit() is True, int() raises ValueError
        "99999999999999999999",  # digits, but beyond the Notification.total_fee column
        "-1",
        "",
    ],
)
def test_unsigned_notification_with_odd_total_fee_is_a_recorded_fail_not_a_500(raw_client, wx_order, sku, total_fee):
    """Anyone on the internet can post this: no key, a junk ``sign``, an odd ``total_fee``."""
    fields = notify_fields(wx_order["order_no"], total_fee, sign="0" * 32)
    response = post_notify(raw_client, xml_of(fields))
    assert is_ack_fail(response), (response.status_code, response.content[:200])
    assert list(Notification.objects.values_list("outcome", flat=True)) == ["bad_signature"]
    assert _state(wx_order["order_no"]) == ("unpaid", "pending")
    assert_conserved({sku.pk: 10})


@pytest.mark.parametrize(
    "body",
    [
        b"\x00",
        b"<xml><return_code>SUCCESS</return_code>\x00</xml>",
        b"\xff\xfe<\x00x\x00m\x00l\x00>\x00",  # UTF-16 with a BOM
        b"<xml>" + "<a>\u4e2d</a>".encode("gbk") + b"</xml>",  # not UTF-8
    ],
)
def test_binary_or_nul_body_is_a_recorded_fail_not_a_500(raw_client, body):
    """A NUL byte cannot be stored in a PostgreSQL text column: the audit row must still be written."""
    response = post_notify(raw_client, body)
    assert is_ack_fail(response), (response.status_code, response.content[:200])
    assert Notification.objects.count() == 1


@pytest.mark.parametrize(
    "content_type",
    [
        "text/xml",
        "application/xml",
        "application/json",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ],
)
def test_content_type_does_not_matter_to_a_genuine_notification(raw_client, wx_order, wechat, content_type):
    wechat.control.pay(wx_order["order_no"])
    body = wechat.control.notifications()[0]["body"].encode()
    response = post_notify(raw_client, body, content_type=content_type)
    assert is_ack_success(response), (response.status_code, response.content[:200])
    assert _state(wx_order["order_no"]) == ("paid", "paid")


@pytest.mark.parametrize("method", ["get", "put", "patch", "delete", "head"])
def test_notify_endpoints_are_post_only(raw_client, method):
    for path in ("/api/v1/payments/wechat/notify", "/api/v1/payments/wechat/refund-notify"):
        assert getattr(raw_client, method)(path).status_code == 405
    assert Notification.objects.count() == 0


def test_oversized_body_is_fail_and_changes_nothing(raw_client, wx_order):
    fields = notify_fields(wx_order["order_no"], 10800, attach="x" * 70_000)
    response = post_notify(raw_client, signed_body(fields))
    assert is_ack_fail(response)
    assert _state(wx_order["order_no"]) == ("unpaid", "pending")


# --- amounts that are "equal" only to a sloppy comparison --------------------------------------


@pytest.mark.parametrize(
    "total_fee", ["010800", "10800.0", "1.08e4", " 10800", "10800 ", "+10800", "１０８００", "10800\u200b", "0x2A30"]
)
def test_signed_notification_with_non_canonical_amount_is_not_applied(raw_client, wx_order, sku, total_fee):
    """Even correctly signed, only the exact decimal fen string is the amount we asked for."""
    fields = notify_fields(wx_order["order_no"], total_fee)
    response = post_notify(raw_client, signed_body(fields))
    assert response.status_code == 200, response.content[:200]
    if is_ack_success(response):  # only acceptable if the value really was read as 10800 exactly
        pytest.fail(f"total_fee {total_fee!r} was accepted as 10800")
    assert is_ack_fail(response)
    assert _state(wx_order["order_no"]) == ("unpaid", "pending")
    assert FollowUp.objects.count() == 0
    assert_conserved({sku.pk: 10})


# --- signatures -------------------------------------------------------------------------------


def test_hmac_sign_type_with_an_md5_signature_is_rejected(raw_client, wx_order):
    fields = notify_fields(wx_order["order_no"], 10800)
    md5 = sign(fields)
    fields.update(sign_type="HMAC-SHA256", sign=md5)
    assert is_ack_fail(post_notify(raw_client, xml_of(fields)))
    fields.update(sign_type="MD5")  # MD5 sign computed without sign_type: sign_type is a signed field
    assert is_ack_fail(post_notify(raw_client, xml_of(fields)))
    assert _state(wx_order["order_no"]) == ("unpaid", "pending")


def test_hmac_signed_with_a_guessable_key_is_rejected(raw_client, wx_order):
    fields = notify_fields(wx_order["order_no"], 10800, sign_type="HMAC-SHA256")
    text = "&".join(f"{k}={fields[k]}" for k in sorted(fields)) + "&key="
    fields["sign"] = hmac.new(b"", text.encode(), hashlib.sha256).hexdigest().upper()
    assert is_ack_fail(post_notify(raw_client, xml_of(fields)))
    assert _state(wx_order["order_no"]) == ("unpaid", "pending")


@pytest.mark.parametrize(
    "mangle",
    [
        lambda s: "",
        lambda s: s[:-1],
        lambda s: s + "0",
        lambda s: " " * 32,
        lambda s: "\u0410" * 32,
    ],
)
def test_mangled_signature_is_rejected(raw_client, wx_order, mangle):
    fields = notify_fields(wx_order["order_no"], 10800)
    fields["sign"] = mangle(sign(fields))
    response = post_notify(raw_client, xml_of(fields))
    assert is_ack_fail(response), (response.status_code, response.content[:200])
    assert _state(wx_order["order_no"]) == ("unpaid", "pending")


def test_empty_elements_are_left_out_of_the_signature(raw_client, wx_order):
    """WECHAT.md: verified over exactly the non-empty fields received."""
    fields = notify_fields(wx_order["order_no"], 10800)
    body = signed_body(fields).replace(
        b"</xml>", b"<attach></attach><device_info/><coupon_fee><![CDATA[]]></coupon_fee></xml>"
    )
    assert is_ack_success(post_notify(raw_client, body))
    assert _state(wx_order["order_no"]) == ("paid", "paid")


def test_duplicated_element_cannot_move_a_payment_to_another_order(raw_client, shopper, sku, place_order, wechat):
    """A genuine notification for order A, with a second <out_trade_no> for order B spliced in
    before or after the original: B must never be paid by A's money."""
    customer, api, address = shopper()
    a = place_order(api, items=[(sku, 3)], address=address)
    b = place_order(api, items=[(sku, 3)], address=address)
    for o in (a, b):
        api.post(f"/api/v1/orders/{o['order_no']}/pay", {"method": "wechat"}, format="json")
    genuine = signed_body(notify_fields(a["order_no"], 10800))
    intruder = f"<out_trade_no><![CDATA[{b['order_no']}]]></out_trade_no>".encode()
    before = genuine.replace(b"<xml>", b"<xml>" + intruder, 1)
    after = genuine.replace(b"</xml>", intruder + b"</xml>", 1)
    for body in (before, after):
        post_notify(raw_client, body)
    assert Order.objects.get(order_no=b["order_no"]).status == "unpaid"
    assert Payment.objects.get(out_trade_no=b["order_no"]).status == "pending"
    assert_conserved({sku.pk: 10})


def test_duplicated_fields_are_refused_as_malformed(raw_client, wx_order):
    """Hardening: with a field given twice there is no single "set of fields received" to verify;
    the shop silently keeps the last value (the sandbox, like WeChat's own parser, refuses it)."""
    genuine = signed_body(notify_fields(wx_order["order_no"], 10800))
    body = genuine.replace(b"<xml>", b"<xml><total_fee>1</total_fee>", 1)
    response = post_notify(raw_client, body)
    assert is_ack_fail(response)
    assert _state(wx_order["order_no"]) == ("unpaid", "pending")


def test_comment_or_split_cdata_inside_a_value_does_not_change_the_amount(raw_client, wx_order):
    fields = notify_fields(wx_order["order_no"], 10800)
    genuine = signed_body(fields)
    body = genuine.replace(
        b"<total_fee><![CDATA[10800]]></total_fee>", b"<total_fee>1<!-- x -->08<![CDATA[0]]><![CDATA[0]]></total_fee>"
    )
    response = post_notify(raw_client, body)
    # whatever the parser makes of it, it is either exactly 10800 (and signed) or refused
    assert response.status_code == 200
    assert Payment.objects.get(out_trade_no=wx_order["order_no"]).status in ("paid", "pending")
    if is_ack_success(response):
        assert Payment.objects.get(out_trade_no=wx_order["order_no"]).total_fee == 10800


# --- which order, which payment ---------------------------------------------------------------


def test_notification_for_a_balance_paid_order_changes_nothing(raw_client, shopper, sku, place_order):
    customer, api, address = shopper(balance_fen=50000)
    order = place_order(api, items=[(sku, 3)], address=address)
    assert api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json").status_code == 200
    response = post_notify(raw_client, signed_body(notify_fields(order["order_no"], 10800)))
    assert is_ack_fail(response)  # no WeChat trade of ours: nothing to apply, nothing to refund
    assert Customer.objects.get(pk=customer.pk).balance_fen == 50000 - 10800
    assert Payment.objects.filter(order__order_no=order["order_no"]).count() == 1
    assert Refund.objects.count() == 0
    assert_conserved({sku.pk: 10})


def test_wechat_money_arriving_after_balance_pay_is_refunded_once(raw_client, shopper, sku, place_order):
    """The trade was closed by balance pay, but WeChat's notification still comes (the user paid in
    the last second): the order stays paid once, the WeChat money is queued for refund once."""
    customer, api, address = shopper(balance_fen=50000)
    order = place_order(api, items=[(sku, 3)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    assert api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json").status_code == 200
    body = signed_body(notify_fields(order["order_no"], 10800, transaction_id="4200009999202611309999999999"))
    for _ in range(3):
        assert is_ack_success(post_notify(raw_client, body))
    assert Order.objects.get(order_no=order["order_no"]).pay_method == "balance"
    assert list(Refund.objects.values_list("reason", "refund_fen")) == [("duplicate_payment", 10800)]
    assert Customer.objects.get(pk=customer.pk).balance_fen == 50000 - 10800
    assert_conserved({sku.pk: 10})


def test_notification_with_another_transaction_id_for_a_paid_payment_changes_nothing(raw_client, wx_order, wechat, sku):
    wechat.control.pay(wx_order["order_no"])
    genuine = wechat.control.notifications()[0]["body"].encode()
    assert is_ack_success(post_notify(raw_client, genuine))
    other = signed_body(notify_fields(wx_order["order_no"], 10800, transaction_id="4200000000000000000000000001"))
    post_notify(raw_client, other)
    payment = Payment.objects.get(out_trade_no=wx_order["order_no"])
    assert payment.transaction_id == wechat.state.trades[wx_order["order_no"]].transaction_id
    assert FollowUp.objects.filter(order__order_no=wx_order["order_no"]).count() == 3
    assert_conserved({sku.pk: 10})


# --- refund notifications ---------------------------------------------------------------------


def _refund_notify_body(inner: dict, appid=None, mch_id=None) -> bytes:
    from wechat_sandbox.wire import refund_req_info_encrypt, to_xml

    req_info = refund_req_info_encrypt(to_xml(inner, root="root"), settings.WECHAT_PAY_API_KEY)
    outer = {
        "return_code": "SUCCESS",
        "appid": appid or settings.WECHAT_APPID,
        "mch_id": mch_id or settings.WECHAT_MCH_ID,
        "nonce_str": "n",
        "req_info": req_info,
    }
    return xml_of(outer)


@pytest.fixture
def two_refunds(shopper, sku, place_order, wechat, deliver):
    """Two paid WeChat orders, each with a full refund submitted to WeChat (not yet confirmed)."""
    from apps.orders.models import AfterSale
    from apps.payments import refunds

    customer, api, address = shopper()
    orders = []
    for _ in range(2):
        order = place_order(api, items=[(sku, 3)], address=address)
        api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
        wechat.control.pay(order["order_no"])
        orders.append(order)
    deliver()
    out = []
    for order in orders:
        api.post(f"/api/v1/orders/{order['order_no']}/refund", {"reason": "x"}, format="json")
        sale = AfterSale.objects.get(order__order_no=order["order_no"])
        refund = refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:t")
        assert refunds.refund_execute(refund_id=refund.pk) == "submitted"
        out.append((order, refund))
    return out


def test_refund_notification_of_one_refund_cannot_confirm_another(raw_client, two_refunds, wechat, sku):
    (a, ra), (b, rb) = two_refunds
    # a forged notice naming B's refund with A's numbers (only the amount can match: same price)
    inner = {
        "out_trade_no": a["order_no"],
        "transaction_id": "x",
        "out_refund_no": rb.out_refund_no,
        "refund_id": "1",
        "total_fee": "10800",
        "refund_fee": "1",
        "refund_status": "SUCCESS",
        "success_time": "2026-11-30 12:00:00",
    }
    assert is_ack_fail(
        post_notify(raw_client, _refund_notify_body(inner), path="/api/v1/payments/wechat/refund-notify")
    )
    assert Refund.objects.get(pk=rb.pk).status == "submitted"


def test_refund_notification_from_another_merchant_is_refused(raw_client, two_refunds):
    (a, ra), _ = two_refunds
    inner = {
        "out_trade_no": a["order_no"],
        "out_refund_no": ra.out_refund_no,
        "refund_id": "1",
        "total_fee": "10800",
        "refund_fee": "10800",
        "refund_status": "SUCCESS",
    }
    body = _refund_notify_body(inner, mch_id="1234567890")
    assert is_ack_fail(post_notify(raw_client, body, path="/api/v1/payments/wechat/refund-notify"))
    assert Refund.objects.get(pk=ra.pk).status == "submitted"


def test_refund_close_replayed_after_success_does_not_fail_the_refund(raw_client, two_refunds, sku):
    (a, ra), _ = two_refunds
    inner = {
        "out_trade_no": a["order_no"],
        "out_refund_no": ra.out_refund_no,
        "refund_id": "1",
        "total_fee": "10800",
        "refund_fee": "10800",
        "refund_status": "SUCCESS",
    }
    path = "/api/v1/payments/wechat/refund-notify"
    assert is_ack_success(post_notify(raw_client, _refund_notify_body(inner), path=path))
    for status in ("REFUNDCLOSE", "CHANGE", "SUCCESS"):
        assert is_ack_success(
            post_notify(raw_client, _refund_notify_body({**inner, "refund_status": status}), path=path)
        )
    assert Refund.objects.get(pk=ra.pk).status == "success"
    assert Order.objects.get(order_no=a["order_no"]).status == "refunded"
    assert_conserved({sku.pk: 10})


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\x00",
        b"<xml/>",
        b"<xml><return_code>SUCCESS</return_code><req_info>%%%</req_info></xml>",
        b"<xml><return_code>SUCCESS</return_code><req_info>" + b"A" * 64 + b"</req_info></xml>",
    ],
)
def test_garbage_refund_notification_is_fail_not_500(raw_client, body):
    response = post_notify(raw_client, body, path="/api/v1/payments/wechat/refund-notify")
    assert is_ack_fail(response), (response.status_code, response.content[:200])


def test_lower_case_sign_is_never_a_500_and_never_pays_twice(raw_client, wx_order, sku):
    fields = notify_fields(wx_order["order_no"], 10800)
    fields["sign"] = sign(fields).lower()
    first = post_notify(raw_client, xml_of(fields))
    second = post_notify(raw_client, xml_of(fields))
    assert first.status_code == second.status_code == 200
    assert FollowUp.objects.count() in (0, 3)
    assert_conserved({sku.pk: 10})


def test_unicode_out_trade_no_is_an_unknown_order(raw_client, wx_order):
    fields = notify_fields(wx_order["order_no"] + "\u200b", 10800)
    assert is_ack_fail(post_notify(raw_client, signed_body(fields)))
    fields = notify_fields("订单" * 20, 10800)
    assert is_ack_fail(post_notify(raw_client, signed_body(fields)))
    assert _state(wx_order["order_no"]) == ("unpaid", "pending")
    assert list(Notification.objects.values_list("outcome", flat=True)) == ["unknown_order", "unknown_order"]
