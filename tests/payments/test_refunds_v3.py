"""Refunds and recharges under Pay API v3, and a v2-paid order refunded after the switch."""

import pytest
from v3_helpers import V3_REFUND_NOTIFY, envelope, headers_for, post_v3

from apps.accounts.models import Customer, WalletEvent
from apps.catalog.models import Sku
from apps.orders.models import AfterSale, Order
from apps.payments import refunds
from apps.payments.models import Notification, Payment, Recharge, RechargePackage, Refund

pytestmark = pytest.mark.django_db


@pytest.fixture
def sku(make_sku):
    return make_sku(price_fen=6000, stock=10)


def _pay(api, order_no):
    assert api.post(f"/api/v1/orders/{order_no}/pay", {"method": "wechat"}, format="json").status_code == 200


@pytest.fixture
def paid_v3(api, sku, address, place_order, wechat, v3pay):
    """A goods order of 2 x 60.00 yuan paid under v3 (notification delivered)."""
    order = place_order(api, items=[(sku, 2)], address=address)
    _pay(api, order["order_no"])
    wechat.control.pay(order["order_no"])
    assert [a["ok"] for a in v3pay.deliver()] == [True]
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"
    return order


def _approved_refund(api, order_no) -> Refund:
    response = api.post(f"/api/v1/orders/{order_no}/refund", {"reason": "不想要了"}, format="json")
    assert response.status_code == 202
    sale = AfterSale.objects.get(order__order_no=order_no, status="requested")
    return refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:test")


def test_v3_refund_is_final_on_its_notification_once(api, paid_v3, sku, wechat, v3pay):
    refund = _approved_refund(api, paid_v3["order_no"])
    assert refunds.refund_execute(refund_id=refund.pk) == "submitted"
    found = wechat.state.refunds[refund.out_refund_no]
    assert (found.api, found.refund_fee, found.total_fee) == ("v3", 12000, 12000)
    assert found.notify_url == "http://127.0.0.1:8000/api/v1/payments/wechat/v3/refund-notify"
    attempts = v3pay.deliver()
    assert [(a["event_type"], a["status"]) for a in attempts] == [("REFUND.SUCCESS", 204)]
    assert v3pay.resend(v3pay.state.delivered[-1]) == (204, "")  # WeChat sends it again
    refund.refresh_from_db()
    assert refund.status == "success" and refund.refund_id == found.refund_id
    assert Order.objects.get(order_no=paid_v3["order_no"]).status == "refunded"
    assert Sku.objects.get(pk=sku.pk).stock == 10  # 2 units back, once
    assert list(Notification.objects.filter(kind="refund").order_by("id").values_list("total_fee", "outcome")) == [
        (12000, "applied"),
        (12000, "duplicate"),
    ]
    assert "secapi/pay/refund" not in wechat.state.api_calls


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_racing_v3_refund_notifications_are_applied_once(api, paid_v3, sku, wechat, v3pay, race):
    """The same REFUND.SUCCESS arriving from several WeChat servers at once: one refund made
    final, its stock given back once, one applied audit row and the rest duplicates."""
    from apps.payments import notifications

    refund = _approved_refund(api, paid_v3["order_no"])
    assert refunds.refund_execute(refund_id=refund.pk) == "submitted"
    note = v3pay.state.pending[0]
    body, headers = note["body"].encode(), dict(note["headers"])
    answers = race(lambda i: notifications.notification_handle(notifications.REFUND_RESULT_V3, body, headers), 8)
    assert [(a.status, a.body) for a in answers] == [(204, b"")] * 8
    refund.refresh_from_db()
    assert refund.status == "success"
    assert Order.objects.get(order_no=paid_v3["order_no"]).status == "refunded"
    assert Sku.objects.get(pk=sku.pk).stock == 10  # the 2 units back once
    assert Payment.objects.get(out_trade_no=refund.payment.out_trade_no).refunded_fen == 12000
    outcomes = sorted(Notification.objects.filter(kind="refund").values_list("outcome", flat=True))
    assert outcomes == ["applied"] + ["duplicate"] * 7


def test_v3_refund_without_notification_is_final_by_query(api, paid_v3, wechat, v3pay):
    import datetime as dt

    from django.utils import timezone

    refund = _approved_refund(api, paid_v3["order_no"])
    refunds.refund_execute(refund_id=refund.pk)
    v3pay.state.pending.clear()  # the notification is lost
    counts = refunds.refunds_sweep(now=timezone.now() + dt.timedelta(minutes=6))
    assert counts == {"query:SUCCESS": 1}
    refund.refresh_from_db()
    assert refund.status == "success"
    assert wechat.state.api_calls["v3/refund/domestic/refunds/{no}"] == 1


def test_v3_refund_abnormal_fails_it_as_v2_does(api, paid_v3, wechat, v3pay, settings):
    wechat.state.config.refund_delay_seconds = 3600  # stays PROCESSING until settled
    refund = _approved_refund(api, paid_v3["order_no"])
    assert refunds.refund_execute(refund_id=refund.pk) == "submitted"
    assert v3pay.deliver() == []
    wechat.control.settle_refunds(out_refund_no=refund.out_refund_no, status="CHANGE")
    assert [(a["event_type"], a["status"]) for a in v3pay.deliver()] == [("REFUND.ABNORMAL", 204)]
    refund.refresh_from_db()
    assert refund.status == "failed" and "ABNORMAL" in refund.last_error
    assert AfterSale.objects.get(order__order_no=paid_v3["order_no"]).status == "failed"


def test_v3_refund_notification_with_a_wrong_amount_is_refused(api, paid_v3, client, v3pay):
    refund = _approved_refund(api, paid_v3["order_no"])
    resource = {
        "mchid": "1900000109",
        "out_trade_no": paid_v3["order_no"],
        "transaction_id": "4200009999202612061234567890",
        "out_refund_no": refund.out_refund_no,
        "refund_id": "50300000000000000000000000000",
        "refund_status": "SUCCESS",
        "success_time": "2026-12-06T10:00:00+08:00",
        "amount": {"total": 12000, "refund": 12001, "payer_total": 12000, "payer_refund": 12000},
    }
    body = envelope(resource, event_type="REFUND.SUCCESS", original_type="refund")
    response = post_v3(client, body, headers_for(body), V3_REFUND_NOTIFY)
    assert response.status_code == 400 and response.json()["message"] == "退款金额不符"
    refund.refresh_from_db()
    assert refund.status == "pending"
    assert Notification.objects.filter(kind="refund").get().outcome == "amount_mismatch"


def test_v2_paid_order_refunded_after_switching_to_v3_goes_through_v2(
    api, sku, address, place_order, wechat, deliver, settings
):
    order = place_order(api, items=[(sku, 2)], address=address)
    _pay(api, order["order_no"])  # v2, the default
    wechat.control.pay(order["order_no"])
    assert [a["ok"] for a in deliver()] == [True]
    settings.WECHAT_PAY_API = "v3"
    settings.WECHAT_PAY_V3_API_BASE = wechat.url.rstrip("/")
    refund = _approved_refund(api, order["order_no"])
    assert refunds.refund_execute(refund_id=refund.pk) == "submitted"
    assert wechat.state.refunds[refund.out_refund_no].api == "v2"
    assert wechat.state.api_calls["secapi/pay/refund"] == 1
    assert not any(name.startswith("v3/refund") for name in wechat.state.api_calls)
    assert all(a["ok"] for a in deliver())  # v2's XML refund notification
    refund.refresh_from_db()
    assert refund.status == "success"
    assert Payment.objects.get(out_trade_no=order["order_no"]).api == "v2"
    assert Order.objects.get(order_no=order["order_no"]).status == "refunded"


def test_v3_recharge_is_credited_once(api, customer, wechat, v3pay):
    package = RechargePackage.objects.create(pay_fen=10000, bonus_fen=1000, sort=1)
    response = api.post("/api/v1/recharges", {"package_id": package.pk}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["pay_params"]["signType"] == "RSA"
    recharge = Recharge.objects.get(recharge_no=body["recharge_no"])
    assert recharge.api == "v3" and wechat.state.trades[recharge.recharge_no].api == "v3"
    wechat.control.pay(recharge.recharge_no)
    assert [(a["status"]) for a in v3pay.deliver()] == [204]
    assert v3pay.resend(v3pay.state.delivered[-1]) == (204, "")
    recharge.refresh_from_db()
    assert recharge.status == "paid"
    assert Customer.objects.get(pk=customer.pk).balance_fen == 11000
    assert WalletEvent.objects.filter(customer=customer, kind="balance").count() == 2  # recharge + bonus, once
    assert list(Notification.objects.order_by("id").values_list("outcome", flat=True)) == ["applied", "duplicate"]
