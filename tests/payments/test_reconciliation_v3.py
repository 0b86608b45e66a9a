"""Daily reconciliation when a day has payments of both Pay APIs: each api's payments against
its own bill (v2 pay/downloadbill, v3 tradebill + download with its hash), one run."""

import datetime as dt
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.orders.models import AfterSale, Order
from apps.payments import refunds
from apps.payments.models import Payment
from apps.payments.reconciliation import apis_of_day, reconcile

pytestmark = pytest.mark.django_db


@pytest.fixture
def buy(api, make_sku, address, place_order, wechat, deliver, v3pay, settings):
    """``buy(price_fen, api="v2"|"v3", notify=True)`` -> a paid (or, without its notification,
    pending) order of one unit, paid under ``api``."""

    def run(price_fen: int, api: str = "v2", notify: bool = True) -> dict:
        settings.WECHAT_PAY_API = api
        order = place_order(api_client, items=[(make_sku(price_fen=price_fen, stock=5), 1)], address=address)
        assert (
            api_client.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json").status_code
            == 200
        )
        wechat.control.pay(order["order_no"])
        if notify:
            assert all(a["ok"] for a in (v3pay.deliver() if api == "v3" else deliver()))
        else:
            v3pay.state.pending.clear()
        return order

    api_client = api
    return run


def _refund_v3(api, order, v3pay) -> None:
    api.post(f"/api/v1/orders/{order['order_no']}/refund", {"reason": "不想要了", "amount_fen": 5000}, format="json")
    sale = AfterSale.objects.get(order__order_no=order["order_no"], status="requested")
    refund = refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:test")
    assert refunds.refund_execute(refund_id=refund.pk) == "submitted"
    assert [a["status"] for a in v3pay.deliver()] == [204]


def _command(day: dt.date) -> str:
    out = StringIO()
    call_command("reconcile", "--date", day.isoformat(), stdout=out)
    return out.getvalue().splitlines()[0]


def test_a_day_of_both_apis_reconciles_to_zero_differences(api, buy, wechat, v3pay, settings):
    old = buy(12800, "v2")
    new = buy(15900, "v3")
    _refund_v3(api, new, v3pay)
    assert Payment.objects.get(out_trade_no=old["order_no"]).api == "v2"
    assert Payment.objects.get(out_trade_no=new["order_no"]).api == "v3"
    today = timezone.localdate()
    assert apis_of_day(today) == ["v2", "v3"]

    run = reconcile(bill_date=today)

    assert (run.status, run.differences, run.error) == ("ok", [], "")
    assert (run.wechat_count, run.local_count) == (3, 3)  # v2: 1 payment; v3: 1 payment + 1 refund
    assert run.wechat_fen == run.local_fen == 12800 + 15900 - 5000
    assert wechat.state.api_calls["pay/downloadbill"] == 1 and wechat.state.api_calls["v3/bill/tradebill"] == 1
    assert _command(today).endswith(" 0 differences")


def test_a_v3_payment_whose_notification_was_lost_is_found(buy, settings):
    buy(12800, "v2")
    lost = buy(15900, "v3", notify=False)  # WeChat took the money; we still think it is pending

    run = reconcile(bill_date=timezone.localdate())

    assert run.status == "differences"
    assert run.differences == [
        {
            "kind": "missing_local",
            "out_trade_no": lost["order_no"],
            "out_refund_no": "",
            "wechat_fen": 15900,
            "local_fen": None,
            "wechat_status": "SUCCESS",
            "local_status": "pending",
            "api": "v3",
        }
    ]
    assert (run.wechat_fen - run.local_fen) == 15900
    assert Order.objects.get(order_no=lost["order_no"]).status == "unpaid"
    assert _command(timezone.localdate()).endswith(" 1 differences")


def test_a_v3_day_without_trades_is_an_empty_bill(wechat, v3pay):
    run = reconcile(bill_date=timezone.localdate() - dt.timedelta(days=3))
    assert (run.status, run.wechat_count, run.local_count, run.differences) == ("ok", 0, 0, [])
    assert "v3/bill/tradebill" in wechat.state.api_calls and "pay/downloadbill" not in wechat.state.api_calls


def test_a_v3_bill_whose_hash_does_not_match_is_an_error(buy, v3pay):
    buy(15900, "v3")
    v3pay.state.faults["tradebill"] = ["bad_hash"]
    run = reconcile(bill_date=timezone.localdate())
    assert run.status == "error" and "hash_value" in run.error and run.error.endswith("(Pay API v3 bill)")
