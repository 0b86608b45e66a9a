"""A payment landing on a cancelled order; WeChat calls that time out (UNKNOWN -> MANUAL)."""

import datetime as dt
import logging

import pytest
from django.utils import timezone

from apps.catalog.models import Sku
from apps.orders import services as orders
from apps.orders.models import Order
from apps.payments import refunds, services
from apps.payments.models import Notification, Payment, Refund

pytestmark = pytest.mark.django_db


@pytest.fixture
def sku(make_sku):
    return make_sku(price_fen=6000, stock=10)


def test_payment_on_cancelled_order_is_kept_and_refunded_exactly_once(api, sku, address, place_order, wechat, deliver):
    order = place_order(api, items=[(sku, 2)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])  # the user pays ...
    row = Order.objects.get(order_no=order["order_no"])
    assert orders.order_mark_cancelled(
        order=row, actor="system:test", reason="cancelled meanwhile"
    )  # ... as it is cancelled
    assert Sku.objects.get(pk=sku.pk).stock == 10

    attempts = deliver()
    for n in wechat.control.notifications(kind="payment"):
        attempts += deliver(n["id"])  # and again, as WeChat does
    assert all(a["ok"] for a in attempts)
    assert Order.objects.get(pk=row.pk).status == "cancelled"  # not revived
    assert Sku.objects.get(pk=sku.pk).stock == 10  # not taken again
    assert Payment.objects.get(out_trade_no=order["order_no"]).status == "paid"  # the money is recorded
    refund = Refund.objects.get()
    assert (refund.reason, refund.refund_fen, refund.out_refund_no) == ("late_payment", 12000, order["order_no"] + "L")
    assert list(Notification.objects.order_by("id").values_list("outcome", flat=True)) == ["late", "duplicate"]
    status = api.get(f"/api/v1/orders/{order['order_no']}/pay-status").json()
    assert status == {
        "order_status": "cancelled",
        "payment_status": "paid",
        "refund_status": "pending",
        "message": "已付款，但订单已取消，款项正在退回",
    }

    assert refunds.refund_execute(refund_id=refund.pk) == "submitted"
    deliver()
    assert Refund.objects.get().status == "success"
    assert (
        api.get(f"/api/v1/orders/{order['order_no']}/pay-status").json()["message"]
        == "已付款，但订单已取消，款项已退回"
    )
    assert wechat.state.trades[order["order_no"]].trade_state == "REFUND"


def test_unifiedorder_timeout_is_unknown_then_cleared_by_query(api, sku, address, place_order, wechat, settings):
    order = place_order(api, items=[(sku, 1)], address=address)
    settings.WECHAT_TIMEOUT_SECONDS = 0.3
    wechat.control.set_faults({"pay/unifiedorder": {"delay_seconds": 1.0, "count": 1}})
    response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    assert response.status_code == 503
    payment = Payment.objects.get(out_trade_no=order["order_no"])
    assert payment.status == "unknown" and payment.prepay_id == ""
    assert api.get(f"/api/v1/orders/{order['order_no']}/pay-status").json()["message"] == "正在向微信确认支付结果"

    now = timezone.now()
    assert services.payments_check_uncertain(now=now) == {}  # first check is due after 1 minute
    assert services.payments_check_uncertain(now=now + dt.timedelta(seconds=61)) == {"clear": 1}  # NOTPAY
    assert Payment.objects.get(pk=payment.pk).status == "pending"
    again = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    assert again.status_code == 200
    assert again.json()["pay_params"]["package"] == f"prepay_id={wechat.state.trades[order['order_no']].prepay_id}"


def test_customer_retrying_while_unknown_finds_the_payment(api, sku, address, place_order, wechat, settings):
    order = place_order(api, items=[(sku, 1)], address=address)
    settings.WECHAT_TIMEOUT_SECONDS = 0.3
    wechat.control.set_faults({"pay/unifiedorder": {"delay_seconds": 1.0, "count": 1}})
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])  # the trade existed after all, and got paid
    response = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    assert response.status_code == 409
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"


def test_uncertain_payment_checked_at_1_5_15_minutes_then_manual_with_one_alert(
    api, sku, address, place_order, wechat, settings, caplog
):
    order = place_order(api, items=[(sku, 1)], address=address)
    settings.WECHAT_PAY_API_BASE = "http://127.0.0.1:9/"  # WeChat unreachable throughout
    assert api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json").status_code == 503
    start = Payment.objects.get().next_check_at - dt.timedelta(minutes=1)
    outcomes = []
    with caplog.at_level(logging.ERROR, logger="apps.payments.services"):
        for minute in (1, 5, 15, 30):
            outcomes.append(services.payments_check_uncertain(now=start + dt.timedelta(minutes=minute, seconds=1)))
    assert outcomes == [{"later": 1}, {"later": 1}, {"manual": 1}, {}]
    payment = Payment.objects.get()
    assert (payment.status, payment.checks) == ("manual", 3)
    assert sum("ALERT payment" in r.getMessage() for r in caplog.records) == 1

    settings.WECHAT_PAY_API_BASE = wechat.url  # staff resolve it from the admin: same service code
    assert services.payment_check_uncertain(payment=payment) == "clear"  # WeChat never saw it
    assert Payment.objects.get().status == "pending"


def test_cancel_right_after_prepay_when_wechat_will_not_close_yet(api, sku, address, place_order, wechat, deliver):
    """Real WeChat refuses closeorder within 5 minutes of unifiedorder. The customer can still
    cancel (WeChat said NOTPAY); if they pay the lapsing trade anyway, the money is refunded."""
    wechat.state.config.min_close_age_seconds = 300
    order = place_order(api, items=[(sku, 1)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    response = api.post(f"/api/v1/orders/{order['order_no']}/cancel")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert wechat.state.trades[order["order_no"]].trade_state == "NOTPAY"  # not closable yet
    assert Sku.objects.get(pk=sku.pk).stock == 10

    wechat.control.pay(order["order_no"])  # the customer pays the old pay sheet anyway
    deliver()
    assert Order.objects.get(order_no=order["order_no"]).status == "cancelled"
    assert Sku.objects.get(pk=sku.pk).stock == 10
    assert list(Refund.objects.values_list("reason", "refund_fen")) == [("late_payment", 7000)]


def test_unifiedorder_in_the_last_minutes_gets_wechats_minimum_expiry(api, sku, address, place_order, wechat):
    from apps.payments.wechat import MIN_EXPIRE

    order = place_order(api, items=[(sku, 1)], address=address)
    Order.objects.filter(order_no=order["order_no"]).update(pay_deadline=timezone.now() + dt.timedelta(minutes=1))
    before = timezone.now()
    assert api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json").status_code == 200
    sent = dt.datetime.strptime(wechat.state.trades[order["order_no"]].params["time_expire"], "%Y%m%d%H%M%S")
    sent = sent.replace(tzinfo=timezone.get_current_timezone())
    assert sent >= (before + MIN_EXPIRE).replace(microsecond=0)
