"""Edges of the API: unparsable paths, big bodies, spoofed addresses, pay-status
polling, junk notifications, expired tokens on public endpoints.

Every answer asserted here is API.md's ``{"code", "message", "detail"}`` with an exact status.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
import requests
from django.conf import settings
from django.utils import timezone

from apps.accounts.tokens import token_issue, token_revoke
from apps.orders.models import Order
from apps.payments.models import InvalidNotificationDay, Notification, Payment

pytestmark = pytest.mark.django_db

NOTIFY = "/api/v1/payments/wechat/notify"
REFUND_NOTIFY = "/api/v1/payments/wechat/refund-notify"


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert set(body) == {"code", "message", "detail"} and body["code"] == code, body
    return body


@pytest.fixture
def unpaid(customer, safe_api, make_sku, address, place_order):
    api = safe_api(customer)
    order = place_order(api, items=[(make_sku(price_fen=3600, stock=10), 1)], address=address)
    return api, order["order_no"]


# --- 1. unparsable path parameters -> 404 not_found -----------------------------------------

BAD_ORDER_NOS = ["abc%00def", "%00", "abc%01def", "abc%0Adef", "1%7F2", "x" * 33, "%E4%B8%AD%E6%96%87", "a%20b"]


@pytest.mark.parametrize("order_no", BAD_ORDER_NOS)
@pytest.mark.parametrize(
    "method, suffix",
    [
        ("get", ""),
        ("post", "/cancel"),
        ("post", "/pay"),
        ("get", "/pay-status"),
        ("post", "/refund"),
        ("post", "/receive"),
    ],
)
def test_unparsable_order_no_is_404_not_found(unpaid, method, suffix, order_no):
    api, real_no = unpaid
    response = getattr(api, method)(f"/api/v1/orders/{order_no}{suffix}", {"method": "balance"}, format="json")
    assert_error(response, 404, "not_found")
    assert Order.objects.get(order_no=real_no).status == "unpaid"


@pytest.mark.parametrize("path", ["/api/v1/orders/abc%00def/cancel", "/api/v1/orders/x/y/z", "/api/v1/nowhere"])
def test_post_to_an_unknown_path_is_404_even_with_csrf_checks(customer, path):
    from django.test import Client

    client = Client(
        enforce_csrf_checks=True,
        raise_request_exception=False,
        HTTP_AUTHORIZATION=f"Bearer {token_issue(customer_id=customer.pk)}",
    )
    assert_error(client.post(path, {}, content_type="application/json"), 404, "not_found")


@pytest.mark.parametrize("path", ["/api/", "/api/nothing", "/api/v2/products", "/api/schema/x", "/api/docs/x"])
def test_a_path_under_api_outside_v1_is_the_json_404_also_with_debug_on(client, settings, path):
    settings.DEBUG = True  # Django's own 404 page would list every URL pattern
    response = client.get(path)
    assert response["Content-Type"] == "application/json"
    assert_error(response, 404, "not_found")


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/products/99999999999999999999",
        "/api/v1/products/9007199254740993",
        "/api/v1/products/0",
        "/api/v1/products/1%00",
        "/api/v1/teachers/99999999999999999999/slots",
        "/api/v1/teachers/0/slots",
        "/api/v1/products/" + "9" * 400,
        "/api/v1/almanac/days/2025-01-01%00",
        "/api/v1/almanac/months/2025%0A-01",
        "/api/v1/almanac/days/" + "1" * 40,
    ],
)
def test_out_of_range_ids_are_404_not_found(safe_api, path):
    assert_error(safe_api().get(path), 404, "not_found")


def test_largest_id_is_still_routed(safe_api):
    body = assert_error(safe_api().get(f"/api/v1/products/{2**53}"), 404, "not_found")
    assert body["detail"] == {"product_id": 2**53}  # the view answered, not the catch-all


# --- 2. bodies over the limit -> 413 payload_too_large -------------------------------------


def test_ten_megabyte_json_body_is_413(customer, safe_api):
    body = json.dumps({"items": [{"sku_id": 1, "quantity": 1}] * 400_000}).encode()
    assert len(body) > 10 * 2**20
    response = safe_api(customer).generic("POST", "/api/v1/orders/confirm", body, content_type="application/json")
    detail = assert_error(response, 413, "payload_too_large")["detail"]
    assert detail == {"max_bytes": settings.API_MAX_BODY_BYTES}
    anon = safe_api().generic("POST", "/api/v1/auth/wechat/login", body, content_type="application/json")
    assert_error(anon, 413, "payload_too_large")


def test_body_at_the_limit_is_parsed(customer, safe_api, settings):
    settings.API_MAX_BODY_BYTES = 1000
    api = safe_api(customer)
    body = json.dumps({"items": [], "pad": "x" * 900}).encode()
    at_limit = body + b" " * (1000 - len(body))
    assert_error(
        api.generic("POST", "/api/v1/orders/confirm", at_limit, content_type="application/json"), 400, "invalid"
    )
    assert_error(
        api.generic("POST", "/api/v1/orders/confirm", at_limit + b" ", content_type="application/json"),
        413,
        "payload_too_large",
    )


@pytest.mark.parametrize("path, kind", [(NOTIFY, "payment"), (REFUND_NOTIFY, "refund")])
def test_oversized_notification_is_wechat_fail_xml_and_counted(safe_api, path, kind):
    response = safe_api().generic("POST", path, b"<xml>" + b"x" * (10 * 2**20) + b"</xml>", content_type="text/xml")
    assert response.status_code == 200 and response["Content-Type"] == "application/xml"
    assert b"<return_code><![CDATA[FAIL]]></return_code>" in response.content
    assert list(InvalidNotificationDay.objects.values_list("kind", "count")) == [(kind, 1)]
    assert Notification.objects.count() == 0


# --- 3. throttles keyed by the real client address -----------------------------------------


def _login(client, forwarded_for: str, remote: str = "203.0.113.7"):
    return client.post(
        "/api/v1/auth/wechat/login",
        {"code": "no-such-code"},
        format="json",
        HTTP_X_FORWARDED_FOR=forwarded_for,
        REMOTE_ADDR=remote,
    )


def test_spoofed_x_forwarded_for_does_not_walk_past_the_login_throttle(safe_api):
    assert settings.TRUSTED_PROXIES == [] and settings.REST_FRAMEWORK["NUM_PROXIES"] == 0  # the defaults
    client = safe_api()
    statuses = [_login(client, f"198.51.100.{i}").status_code for i in range(25)]
    assert statuses[:20] == [400] * 20  # bad code: WeChat said 40029
    assert statuses[20:] == [429] * 5
    body = assert_error(_login(client, "192.0.2.1"), 429, "throttled")
    assert body["message"] == "请求过于频繁，请稍后再试。" and body["detail"]["retry_after_seconds"] > 0
    # Another real address has its own allowance.
    assert _login(client, "198.51.100.1", remote="203.0.113.8").status_code == 400


def test_trusted_proxy_takes_the_address_the_proxy_saw(safe_api, settings):
    settings.TRUSTED_PROXIES = ["127.0.0.1"]
    client = safe_api()
    # Behind one proxy the client is the last X-Forwarded-For entry; what the client wrote
    # before it (a spoofed first entry) does not change its bucket.
    statuses = [_login(client, f"10.9.9.{i}, 198.51.100.50", remote="127.0.0.1").status_code for i in range(22)]
    assert statuses[:20] == [400] * 20 and statuses[20:] == [429] * 2
    assert _login(client, "198.51.100.51", remote="127.0.0.1").status_code == 400
    # A peer that is not the proxy names no one with the header: it is counted as itself.
    assert _login(client, "198.51.100.50", remote="203.0.113.9").status_code == 400


# --- 4. pay-status asks WeChat at most once per order per 10 s -----------------------------


def test_pay_status_asks_wechat_once_per_ten_seconds(unpaid, wechat):
    api, order_no = unpaid
    assert api.post(f"/api/v1/orders/{order_no}/pay", {"method": "wechat"}, format="json").status_code == 200
    answers = [api.get(f"/api/v1/orders/{order_no}/pay-status") for _ in range(40)]
    assert {r.status_code for r in answers} == {200}
    assert {r.json()["payment_status"] for r in answers} == {"pending"}
    assert wechat.state.api_calls["pay/orderquery"] == 1
    # What a tester of the running shop reads: the sandbox's control API counts the calls too.
    assert requests.get(wechat.url + "sandbox/api-calls", timeout=5).json()["pay/orderquery"] == 1
    # 10 s later the next call asks again and finds the payment its notification never brought.
    wechat.control.pay(order_no)
    Payment.objects.filter(out_trade_no=order_no).update(
        status_queried_at=timezone.now() - dt.timedelta(seconds=settings.PAY_STATUS_QUERY_INTERVAL_SECONDS)
    )
    assert api.get(f"/api/v1/orders/{order_no}/pay-status").json()["order_status"] == "paid"
    assert wechat.state.api_calls["pay/orderquery"] == 2
    assert [api.get(f"/api/v1/orders/{order_no}/pay-status").json()["order_status"] for _ in range(5)] == ["paid"] * 5
    assert wechat.state.api_calls["pay/orderquery"] == 2  # paid: nothing to ask


def test_claim_status_query_is_one_winner_per_interval(unpaid, wechat):
    api, order_no = unpaid
    api.post(f"/api/v1/orders/{order_no}/pay", {"method": "wechat"}, format="json")
    payment = Payment.objects.get(out_trade_no=order_no)
    assert [Payment.claim_status_query(payment.pk) for _ in range(3)] == [True, False, False]


# --- 5. invalid notifications: counted, bounded sample ------------------------------------


def test_five_hundred_junk_notifications_keep_a_bounded_sample(safe_api, settings):
    settings.INVALID_NOTIFICATION_SAMPLES = 7
    settings.INVALID_NOTIFICATION_SAMPLE_CHARS = 512
    client = safe_api()
    junk = [
        b"<xml><return_code>SUCCESS</return_code><out_trade_no>1</out_trade_no><pad>" + b"y" * 30_000 + b"</pad></xml>",
        b"\x00\xff not xml at all " * 100,
        b"<xml><sign>00</sign><total_fee>1</total_fee></xml>",
    ]
    for i in range(500):
        response = client.generic("POST", NOTIFY, junk[i % 3], content_type="text/xml")
        assert response.status_code == 200 and b"FAIL" in response.content
    assert list(InvalidNotificationDay.objects.values_list("day", "kind", "count")) == [
        (timezone.localdate(), "payment", 500)
    ]
    samples = list(Notification.objects.values_list("outcome", "body"))
    assert len(samples) == 7
    assert {outcome for outcome, _ in samples} == {"bad_signature", "malformed"}
    assert max(len(body) for _, body in samples) == 512


def test_junk_refund_notifications_are_counted_apart(safe_api, settings):
    settings.INVALID_NOTIFICATION_SAMPLES = 2
    client = safe_api()
    for _ in range(5):
        client.generic("POST", REFUND_NOTIFY, b"<xml><req_info>bm90IGFlcw==</req_info></xml>", content_type="text/xml")
    assert list(InvalidNotificationDay.objects.values_list("kind", "count")) == [("refund", 5)]
    assert Notification.objects.filter(kind="refund", outcome="malformed").count() == 2


# --- 6. public endpoints: a bad token is anonymous; private ones 401 ----------------------

PUBLIC = ["/api/v1/categories", "/api/v1/products", "/api/v1/teachers", "/api/v1/almanac/activities"]


@pytest.mark.parametrize(
    "header", ["Bearer expired-or-unknown-token", "Bearer", "Bearer a b", "Token abc", "Bearer \u00e9"]
)
def test_public_endpoints_treat_a_bad_token_as_anonymous(safe_api, consultation, header):
    client = safe_api()
    client.credentials(HTTP_AUTHORIZATION=header)
    paths = PUBLIC + [
        f"/api/v1/products/{consultation.product.pk}",
        f"/api/v1/teachers/{consultation.teacher.pk}/slots",
    ]
    for path in paths:
        response = client.get(path)
        assert response.status_code == 200, (path, response.content[:200])
    assert client.get("/api/v1/products").json()["count"] == 1
    body = assert_error(client.get("/api/v1/me"), 401, "unauthenticated")
    assert body["message"] == "请先登录（令牌缺失、无效或已过期）。"
    assert_error(client.get("/api/v1/orders"), 401, "unauthenticated")


def test_revoked_token_sees_the_catalog_but_not_its_orders(customer, safe_api, consultation):
    token = token_issue(customer_id=customer.pk)
    client = safe_api()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.get("/api/v1/me").status_code == 200
    token_revoke(token)
    assert client.get(f"/api/v1/products/{consultation.product.pk}").json()["id"] == consultation.product.pk
    assert_error(client.get("/api/v1/me"), 401, "unauthenticated")


def test_admin_shows_invalid_notification_days_read_only(admin_client, safe_api):
    safe_api().generic("POST", NOTIFY, b"junk", content_type="text/xml")
    response = admin_client.get("/admin/payments/invalidnotificationday/")
    assert response.status_code == 200 and response.context["cl"].result_count == 1
    day = InvalidNotificationDay.objects.get()
    assert admin_client.get(f"/admin/payments/invalidnotificationday/{day.pk}/change/").status_code == 200
    assert admin_client.get("/admin/payments/invalidnotificationday/add/").status_code == 403
