"""Refunds: request, approval, one out_refund_no per refund, retries, confirmation, restock."""

import datetime as dt
import logging

import pytest
from django.utils import timezone

from apps.accounts.models import Customer, WalletEvent
from apps.appointments.models import Booking
from apps.catalog.models import Sku
from apps.orders.models import AfterSale, Order
from apps.payments import refunds
from apps.payments.models import Notification, Payment, Refund

pytestmark = pytest.mark.django_db


@pytest.fixture
def sku(make_sku):
    return make_sku(price_fen=6000, stock=10)


@pytest.fixture
def paid(api, sku, address, place_order, wechat, deliver):
    """A goods order of 2 x 60.00 yuan paid with WeChat (notification delivered)."""
    order = place_order(api, items=[(sku, 2)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])
    deliver()
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"
    return order


def request_refund(api, order_no, **body):
    return api.post(f"/api/v1/orders/{order_no}/refund", {"reason": "不想要了", **body}, format="json")


def approve(order_no):
    sale = AfterSale.objects.get(order__order_no=order_no, status="requested")
    return refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:test")


def test_full_refund_end_to_end_restocks_once(api, paid, sku, wechat, deliver):
    response = request_refund(api, paid["order_no"])
    assert response.status_code == 202
    assert response.json() == {"refund_no": f"{paid['order_no']}R1", "status": "requested", "amount_fen": 12000}
    assert request_refund(api, paid["order_no"]).json()["refund_no"] == f"{paid['order_no']}R1"  # double click
    assert AfterSale.objects.count() == 1
    assert api.get(f"/api/v1/orders/{paid['order_no']}/pay-status").json()["message"] == "退款申请已提交，等待商家处理"

    refund = approve(paid["order_no"])
    assert approve_again_is_noop(paid["order_no"])
    assert Order.objects.get(order_no=paid["order_no"]).status == "refunding"
    assert Payment.objects.get(out_trade_no=paid["order_no"]).refunded_fen == 12000
    assert refunds.refund_execute(refund_id=refund.pk) == "submitted"
    assert refunds.refund_execute(refund_id=refund.pk) == "submitted"  # a duplicate message: no second call
    assert [(r["out_refund_no"], r["refund_fee"]) for r in wechat.control.refunds()] == [(refund.out_refund_no, 12000)]

    for _ in range(2):  # the refund notification, and WeChat sending it again
        assert all(a["ok"] for a in deliver())
        for n in wechat.control.notifications(kind="refund"):
            deliver(n["id"])
    refund.refresh_from_db()
    assert refund.status == "success"
    assert Order.objects.get(order_no=paid["order_no"]).status == "refunded"
    assert AfterSale.objects.get().status == "refunded"
    assert Sku.objects.get(pk=sku.pk).stock == 10  # 2 units back, once
    assert api.get(f"/api/v1/orders/{paid['order_no']}/pay-status").json()["refund_status"] == "success"
    assert (
        list(
            Notification.objects.filter(kind="refund")
            .order_by("id")
            .values_list("out_refund_no", "total_fee", "outcome")
        )
        == [(refund.out_refund_no, 12000, "applied")] + [(refund.out_refund_no, 12000, "duplicate")] * 2
    )  # the two re-sends


def approve_again_is_noop(order_no):
    sale = AfterSale.objects.get(order__order_no=order_no)
    return refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:test") is None and Refund.objects.count() == 1


def test_partial_refunds_never_exceed_what_was_paid(api, paid, sku):
    assert request_refund(api, paid["order_no"], amount_fen=5000).status_code == 202
    first = approve(paid["order_no"])
    refunds.refund_execute(refund_id=first.pk)
    open_again = request_refund(api, paid["order_no"], amount_fen=3000)
    assert open_again.status_code == 409  # the first request is still open (approved, not yet refunded)
    refunds.refund_succeeded(refund=first)
    assert Order.objects.get(order_no=paid["order_no"]).status == "paid"  # a partial refund keeps the order
    assert Sku.objects.get(pk=sku.pk).stock == 8  # and does not restock
    too_much = request_refund(api, paid["order_no"], amount_fen=7001)
    assert too_much.status_code == 400 and too_much.json()["detail"]["amount_fen"] == ["可退款金额为 1 到 7000 分"]
    assert request_refund(api, paid["order_no"]).json() == {
        "refund_no": f"{paid['order_no']}R2",
        "status": "requested",
        "amount_fen": 7000,
    }
    second = approve(paid["order_no"])
    refunds.refund_execute(refund_id=second.pk)
    refunds.refund_succeeded(refund=second)
    assert Payment.objects.get(out_trade_no=paid["order_no"]).refunded_fen == 12000
    assert sum(Refund.objects.values_list("refund_fen", flat=True)) == 12000
    replay = request_refund(api, paid["order_no"])  # the same request again: the same refund
    assert replay.status_code == 202 and replay.json() == {
        "refund_no": f"{paid['order_no']}R2",
        "status": "refunded",
        "amount_fen": 7000,
    }
    other = request_refund(api, paid["order_no"], reason="还想再退")  # a new request: nothing left
    assert other.status_code == 409 and other.json()["code"] == "invalid_state"
    assert AfterSale.objects.count() == 2
    assert Order.objects.get(order_no=paid["order_no"]).status == "refunded"  # the partials made it whole
    assert Sku.objects.get(pk=sku.pk).stock == 10


def test_refund_of_unpaid_order_is_409(api, sku, address, place_order):
    order = place_order(api, items=[(sku, 1)], address=address)
    response = request_refund(api, order["order_no"])
    assert response.status_code == 409 and response.json()["code"] == "invalid_state"


def test_refund_retries_system_error_with_same_number_then_succeeds(api, paid, wechat):
    request_refund(api, paid["order_no"])
    refund = approve(paid["order_no"])
    wechat.control.set_faults({"secapi/pay/refund": {"system_error": True, "count": 1}})
    now = timezone.now()
    assert refunds.refund_execute(refund_id=refund.pk, now=now) == "pending"
    refund.refresh_from_db()
    assert refund.attempts == 1 and "SYSTEMERROR" in refund.last_error
    assert refund.next_attempt_at == now + dt.timedelta(seconds=60)
    assert refunds.refunds_sweep(now=now) == {}  # back-off not over
    assert refunds.refunds_sweep(now=now + dt.timedelta(seconds=61)) == {"submitted": 1}
    assert [r["out_refund_no"] for r in wechat.control.refunds()] == [refund.out_refund_no]


def test_refund_fails_visibly_after_three_tries_and_staff_retry_works(api, paid, wechat, caplog):
    request_refund(api, paid["order_no"])
    refund = approve(paid["order_no"])
    wechat.control.set_faults({"secapi/pay/refund": {"err_code": "BIZERR_NEED_RETRY", "count": 3}})
    now = timezone.now()
    with caplog.at_level(logging.ERROR, logger="apps.payments.refunds"):
        for wait in (0, 61, 61 + 301):
            refunds.refunds_sweep(now=now + dt.timedelta(seconds=wait))
    refund.refresh_from_db()
    assert (refund.status, refund.attempts) == ("failed", 3)
    assert AfterSale.objects.get().status == "failed"
    assert sum("ALERT refund" in r.getMessage() for r in caplog.records) == 1
    assert wechat.control.refunds() == []

    assert refunds.refund_retry(refund_id=refund.pk, actor="staff:test") is True
    assert refunds.refund_execute(refund_id=refund.pk) == "submitted"
    assert [r["out_refund_no"] for r in wechat.control.refunds()] == [refund.out_refund_no]


def test_refund_when_wechat_times_out_is_retried_not_failed(api, paid, settings):
    request_refund(api, paid["order_no"])
    refund = approve(paid["order_no"])
    settings.WECHAT_PAY_API_BASE = "http://127.0.0.1:9/"
    assert refunds.refund_execute(refund_id=refund.pk) == "pending"
    assert "PayUnavailable" in Refund.objects.get(pk=refund.pk).last_error


def test_refund_notification_rejects_garbage_and_wrong_amount(client, api, paid, wechat):
    request_refund(api, paid["order_no"])
    refunds.refund_execute(refund_id=approve(paid["order_no"]).pk)
    for body in [
        b"<xml><return_code>SUCCESS</return_code><req_info>bm9wZQ==</req_info>"
        b"<appid>wx8d5f3c1a2b4e6f70</appid><mch_id>1900000109</mch_id></xml>",
        b'<!DOCTYPE x [<!ENTITY a "b">]><xml>&a;</xml>',
        b"junk",
    ]:
        response = client.post("/api/v1/payments/wechat/refund-notify", data=body, content_type="text/xml")
        assert b"FAIL" in response.content
    assert Refund.objects.get().status == "submitted"
    assert list(Notification.objects.filter(kind="refund").values_list("outcome", flat=True)) == ["malformed"] * 3


def test_balance_paid_order_is_refunded_to_the_balance_once(make_customer, make_api, sku, place_order):
    from apps.accounts.models import Address

    customer = make_customer(balance_fen=50000)
    api = make_api(customer)
    address = Address.objects.create(
        customer=customer, name="甲", phone="13800000000", province="浙江省", city="杭州市", detail="1号"
    )
    order = place_order(api, items=[(sku, 1)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    assert Customer.objects.get(pk=customer.pk).balance_fen == 50000 - 7000  # 60 + 10 freight
    request_refund(api, order["order_no"])
    refund = approve(order["order_no"])
    assert refunds.refund_execute(refund_id=refund.pk) == "success"
    assert refunds.refund_execute(refund_id=refund.pk) == "success"
    assert Customer.objects.get(pk=customer.pk).balance_fen == 50000
    assert WalletEvent.objects.filter(reason="refund").count() == 1
    assert Order.objects.get(order_no=order["order_no"]).status == "refunded"
    assert Sku.objects.get(pk=sku.pk).stock == 10


def test_consultation_refund_far_ahead_is_auto_approved_and_frees_the_slot(
    make_customer, make_api, consultation, place_order
):
    customer = make_customer(balance_fen=50000)
    api = make_api(customer)
    slot = consultation.slots[-1]  # days ahead: more than REFUND_AUTO_APPROVE_HOURS
    order = place_order(api, items=[(consultation.sku, 1)], slot=slot)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    response = request_refund(api, order["order_no"])
    assert response.json()["status"] == "approved"
    refunds.refund_execute(refund_id=Refund.objects.get().pk)
    assert Booking.objects.filter(slot_id=slot.pk, live=True).count() == 0
    assert Order.objects.get(order_no=order["order_no"]).status == "refunded"
    again = request_refund(api, order["order_no"])  # the client retries after a lost answer
    assert again.status_code == 202
    assert again.json() == {"refund_no": response.json()["refund_no"], "status": "refunded", "amount_fen": 29900}
    assert Refund.objects.count() == AfterSale.objects.count() == 1
    assert Customer.objects.get(pk=customer.pk).balance_fen == 50000
