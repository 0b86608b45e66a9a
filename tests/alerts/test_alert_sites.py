"""Every ALERT of the shop is one Alert row per problem, however often the problem is hit, and
one group-robot message in Chinese naming the order / refund number."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from django.utils import timezone

from apps.alerts.models import Alert
from apps.orders import followups
from apps.orders.models import AfterSale, FollowUp
from apps.payments import refunds, services
from apps.payments.models import Payment
from apps.payments.reconciliation import reconcile

pytestmark = pytest.mark.django_db


@pytest.fixture
def paid(api, make_sku, address, place_order, wechat, deliver):
    """A goods order of 2 x 60.00 yuan paid with WeChat (notification delivered)."""
    order = place_order(api, items=[(make_sku(price_fen=6000, stock=10), 2)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])
    deliver()
    return order


def robot_texts(wechat) -> list[str]:
    return [m["content"] for m in wechat.control.robot_messages()]


def test_refund_failed_twice_is_one_alert_and_one_message(api, paid, wechat, send_alerts, caplog):
    api.post(f"/api/v1/orders/{paid['order_no']}/refund", {"reason": "不想要了"}, format="json")
    sale = AfterSale.objects.get(order__order_no=paid["order_no"])
    refund = refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:test")
    now = timezone.now()
    with caplog.at_level(logging.ERROR, logger="apps.payments.refunds"):
        for round_ in range(2):  # FAILED, staff retry, FAILED again
            wechat.control.set_faults({"secapi/pay/refund": {"err_code": "BIZERR_NEED_RETRY", "count": 3}})
            for wait in (0, 61, 61 + 301):
                refunds.refunds_sweep(now=now + dt.timedelta(days=round_, seconds=wait))
            refund.refresh_from_db()
            assert refund.status == "failed"
            if round_ == 0:
                assert refunds.refund_retry(refund_id=refund.pk, actor="staff:test") is True
    assert sum("ALERT refund" in r.getMessage() for r in caplog.records) == 2  # the log line as before
    alert = Alert.objects.get()
    assert (alert.key, alert.kind) == (f"refund:{refund.out_refund_no}:failed", "refund_failed")
    assert alert.title == f"退款 {refund.out_refund_no} 失败（订单 {paid['order_no']}）"
    assert "120.00 元" in alert.text and "BIZERR_NEED_RETRY" in alert.text

    assert send_alerts() == {"sent": 1}
    assert send_alerts(minutes=10) == {}
    [text] = robot_texts(wechat)
    assert refund.out_refund_no in text and paid["order_no"] in text and "退款失败" in text


def test_payment_manual_twice_is_one_alert_and_one_message(
    api, make_sku, address, place_order, settings, wechat, send_alerts
):
    order = place_order(api, items=[(make_sku(price_fen=6000), 1)], address=address)
    settings.WECHAT_PAY_API_BASE = "http://127.0.0.1:9/"  # WeChat unreachable throughout
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    payment = Payment.objects.get()
    start = payment.next_check_at - dt.timedelta(minutes=1)
    for minute in (1, 5, 15):
        services.payments_check_uncertain(now=start + dt.timedelta(minutes=minute, seconds=1))
    payment.refresh_from_db()
    assert payment.status == "manual"
    assert services.payment_check_uncertain(payment=payment) == "manual"  # staff check while WeChat is away
    Payment.objects.filter(pk=payment.pk).update(status="unknown", checks=2)  # uncertain again, checks run out again
    assert services.payment_check_uncertain(payment=Payment.objects.get()) == "manual"
    alert = Alert.objects.get()
    assert (alert.key, alert.kind) == (f"payment:{order['order_no']}:manual", "payment_manual")
    assert payment.total_fee == 7000 and f"商户订单号 {order['order_no']}（70.00 元）" in alert.text

    assert send_alerts() == {"sent": 1}
    [text] = robot_texts(wechat)
    assert order["order_no"] in text and "人工处理" in text


def test_followup_failed_twice_is_one_alert_and_one_message(paid, settings, wechat, send_alerts):
    row = FollowUp.objects.get(kind="subscribe_message")
    good = settings.WECHAT_API_BASE
    settings.WECHAT_API_BASE = "http://127.0.0.1:9/"
    for _ in range(2):  # FAILED; put back by hand and FAILED again
        for _attempt in range(FollowUp.MAX_ATTEMPTS):
            followups.followup_execute(row.pk)
        assert FollowUp.objects.get(pk=row.pk).status == "failed"
        FollowUp.objects.filter(pk=row.pk).update(status="pending", attempts=0)
    alert = Alert.objects.get()
    assert (alert.key, alert.kind) == (f"followup:{row.key}:failed", "followup_failed")
    assert alert.title == f"订单 {paid['order_no']} 的后续任务「订阅消息」失败"

    settings.WECHAT_API_BASE = good
    assert send_alerts() == {"sent": 1}
    [text] = robot_texts(wechat)
    assert paid["order_no"] in text and "后续任务" in text


def test_reconciliation_rerun_is_one_alert_per_day_and_status(
    api, make_sku, address, place_order, wechat, settings, send_alerts
):
    order = place_order(api, items=[(make_sku(price_fen=15900), 1)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])  # paid at WeChat; the notification never arrives
    day = timezone.localdate()
    settings.WECHAT_PAY_API_BASE = "http://127.0.0.1:9/"
    reconcile(bill_date=day)
    reconcile(bill_date=day)
    settings.WECHAT_PAY_API_BASE = wechat.url
    reconcile(bill_date=day)
    reconcile(bill_date=day)  # beat retried, or staff clicked again
    assert list(Alert.objects.order_by("pk").values_list("key", flat=True)) == [
        f"reconciliation:{day}:error",
        f"reconciliation:{day}:differences",
    ]
    differences = Alert.objects.get(key=f"reconciliation:{day}:differences")
    assert differences.title == f"{day} 对账有 1 笔差异"
    assert f"微信有、本地无 1 笔（{order['order_no']}）" in differences.text

    assert send_alerts() == {"sent": 2}
    texts = robot_texts(wechat)
    assert len(texts) == 2 and "未能取得微信账单" in texts[0] and order["order_no"] in texts[1]
