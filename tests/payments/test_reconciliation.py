"""Daily reconciliation against WeChat's bill (pay/downloadbill served by the sandbox)."""

import datetime as dt
import io
import logging

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db.models import F
from django.utils import timezone
from wechatpy.pay.utils import calculate_signature

import apps.payments.admin_reconciliation  # noqa: F401  (registers the admin until admin.py imports it)
from apps.orders.models import AfterSale
from apps.payments import reconciliation, refunds
from apps.payments.models import Payment, ReconciliationRun, Refund
from apps.payments.reconciliation import (
    BillFormatError,
    parse_bill,
    reconcile,
    yuan_to_fen,
)
from apps.payments.tasks import reconcile_daily

pytestmark = pytest.mark.django_db

LOGGER = "apps.payments.reconciliation"
CRLF = "\r\n"
HEADER = (
    "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,"
    "货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,"
    "商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注"
)
SUMMARY_HEADER = "总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额"


def line(*cells) -> str:
    return ",".join("`" + c for c in cells)


def bill_text(*rows: str, summary: str) -> str:
    return CRLF.join([HEADER, *rows, SUMMARY_HEADER, summary]) + CRLF


PAY_1FEN = line(
    "2026-11-30 09:00:01",
    "wx8d5f3c1a2b4e6f70",
    "1900000109",
    "0",
    "",
    "4200000001202611300000000001",
    "SM1",
    "oUser1",
    "JSAPI",
    "SUCCESS",
    "OTHERS",
    "CNY",
    "0.01",
    "0.00",
    "0",
    "0",
    "0.00",
    "0.00",
    "",
    "",
    "一分钱",
    "",
    "0.00",
    "0.60%",
    "0.01",
    "0.00",
    "",
)
PAY_BIG = line(
    "2026-11-30 10:30:00",
    "wx8d5f3c1a2b4e6f70",
    "1900000109",
    "0",
    "",
    "4200000002202611300000000002",
    "SM2",
    "oUser2",
    "JSAPI",
    "SUCCESS",
    "OTHERS",
    "CNY",
    "1234.56",
    "0.00",
    "0",
    "0",
    "0.00",
    "0.00",
    "",
    "",
    "青瓷盖碗, 天青",
    "a1",
    "7.41",
    "0.60%",
    "1234.56",
    "0.00",
    "",
)
REFUND_29 = line(
    "2026-11-30 11:00:00",
    "wx8d5f3c1a2b4e6f70",
    "1900000109",
    "0",
    "",
    "4200000002202611300000000002",
    "SM2",
    "oUser2",
    "JSAPI",
    "REFUND",
    "OTHERS",
    "CNY",
    "0.00",
    "0.00",
    "50300000012026113000000000001",
    "SM2R1",
    "0.29",
    "0.00",
    "ORIGINAL",
    "SUCCESS",
    "青瓷盖碗, 天青",
    "a1",
    "-0.00",
    "0.60%",
    "0.00",
    "0.29",
    "",
)
GOOD_SUMMARY = line("3", "1234.57", "0.29", "0.00", "7.41", "1234.57", "0.29")


# --- parsing -----------------------------------------------------------------------------------


def test_yuan_to_fen_is_exact_where_float_is_not():
    assert int(0.29 * 100) == 28 and int(19.99 * 100) == 1998  # why Decimal
    assert [yuan_to_fen(s) for s in ("0.01", "0.29", "19.99", "1234.56", "-0.30", "100", "", "0.10")] == [
        1,
        29,
        1999,
        123456,
        -30,
        10000,
        0,
        10,
    ]
    for bad in ("1.234", "abc", "NaN", "1e400x"):
        with pytest.raises(BillFormatError):
            yuan_to_fen(bad)


def test_parse_bill_reads_payments_and_refunds_in_exact_fen():
    bill = parse_bill(bill_text(PAY_1FEN, PAY_BIG, REFUND_29, summary=GOOD_SUMMARY))
    assert [(t.out_trade_no, t.transaction_id, t.trade_state, t.total_fen) for t in bill.trades] == [
        ("SM1", "4200000001202611300000000001", "SUCCESS", 1),
        ("SM2", "4200000002202611300000000002", "SUCCESS", 123456),
    ]
    assert bill.trades[0].traded_at == "2026-11-30 09:00:01"
    [refund] = bill.refunds
    assert (
        refund.out_trade_no,
        refund.out_refund_no,
        refund.refund_id,
        refund.refund_fen,
        refund.refund_status,
        refund.trade_state,
    ) == ("SM2", "SM2R1", "50300000012026113000000000001", 29, "SUCCESS", "REFUND")
    assert bill.row_count == 3
    assert bill.summary == {
        "总交易单数": 3,
        "应结订单总金额": 123457,
        "退款总金额": 29,
        "充值券退款总金额": 0,
        "手续费总金额": 741,
        "订单总金额": 123457,
        "申请退款总金额": 29,
    }


def test_parse_bill_of_no_bill_is_empty():
    assert parse_bill("") == reconciliation.Bill()
    assert parse_bill("").row_count == 0


@pytest.mark.parametrize(
    "text, message",
    [
        (
            bill_text(
                PAY_1FEN, PAY_BIG, REFUND_29, summary=line("3", "1234.58", "0.29", "0.00", "7.41", "1234.57", "0.29")
            ),
            "应结订单金额 lines add up to 123457 fen",
        ),
        (bill_text(PAY_1FEN, PAY_BIG, summary=GOOD_SUMMARY), "bill has 2 lines, its summary says 3"),
        (CRLF.join([HEADER, PAY_1FEN, PAY_BIG]), "no summary"),  # cut off in transit
        (
            bill_text(
                PAY_1FEN.replace("`0.01,`0.00,`0,", "`0.015,`0.00,`0,", 1), PAY_BIG, REFUND_29, summary=GOOD_SUMMARY
            ),
            "2 decimals",
        ),
        (bill_text(PAY_1FEN[:-4], summary=GOOD_SUMMARY), "fields"),
        ("<xml><return_code>FAIL</return_code></xml>", "header lacks"),
    ],
)
def test_parse_bill_refuses_a_bill_that_does_not_add_up(text, message):
    with pytest.raises(BillFormatError, match=message):
        parse_bill(text)


# --- shop scenarios ----------------------------------------------------------------------------


@pytest.fixture
def pay(api, address, make_sku, place_order, wechat, deliver):
    """``pay(price_fen, notify=True)``: an order of one unit paid at WeChat; the notification
    is delivered unless ``notify=False``. Returns the order JSON."""

    def run(price_fen: int, *, notify: bool = True) -> dict:
        order = place_order(api, items=[(make_sku(price_fen=price_fen), 1)], address=address)
        started = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
        assert started.status_code == 200
        wechat.control.pay(order["order_no"])
        if notify:
            assert [a["ok"] for a in deliver()] == [True]
            assert Payment.objects.get(out_trade_no=order["order_no"]).status == "paid"
        return order

    return run


@pytest.fixture
def refund(api):
    """``refund(order, amount_fen)``: request, approve and submit a refund to WeChat -> Refund."""

    def run(order: dict, amount_fen: int) -> Refund:
        response = api.post(
            f"/api/v1/orders/{order['order_no']}/refund",
            {"reason": "不想要了", "amount_fen": amount_fen},
            format="json",
        )
        assert response.status_code == 202, response.json()
        sale = AfterSale.objects.get(refund_no=response.json()["refund_no"])
        row = refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:test")
        assert refunds.refund_execute(refund_id=row.pk) == "submitted"
        return row

    return run


@pytest.fixture
def alerts(caplog):
    """``alerts()``: how many ALERT reconciliation lines were logged so far."""
    caplog.set_level(logging.ERROR, logger=LOGGER)
    return lambda: sum("ALERT reconciliation" in r.getMessage() for r in caplog.records)


def today() -> dt.date:
    return timezone.localdate()


def test_reconcile_clean_day_is_ok_and_balances_to_the_fen(pay, refund, wechat, deliver, alerts):
    big = pay(12800)  # no freight from 99 yuan
    small = pay(1)  # 0.01 yuan + 10.00 freight
    assert (big["pay_fen"], small["pay_fen"]) == (12800, 1001)
    done = refund(big, 5000)
    assert all(a["ok"] for a in deliver())  # WeChat's refund notification: SUCCESS
    wechat.state.config.refund_delay_seconds = 3600  # the next refund stays PROCESSING at WeChat
    pending = refund(small, 1001)

    run = reconcile(bill_date=today())

    assert Refund.objects.get(pk=done.pk).status == "success"
    assert Refund.objects.get(pk=pending.pk).status == "submitted"
    assert run.status == "ok" and run.differences == [] and run.error == ""
    assert (run.wechat_count, run.local_count) == (4, 4)  # 2 payments + 2 refunds each side
    assert run.wechat_fen == run.local_fen == 12800 + 1001 - 5000 - 1001
    assert run.alerted is False and alerts() == 0
    assert ReconciliationRun.objects.get(bill_date=today()).pk == run.pk


def test_reconcile_payment_whose_notification_never_came_is_missing_local(pay, alerts):
    known = pay(12800)
    lost = pay(15900, notify=False)  # WeChat took the money; we still think it is pending

    run = reconcile(bill_date=today())

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
        }
    ]
    assert (run.wechat_count, run.local_count) == (2, 1)
    assert (run.wechat_fen, run.local_fen) == (12800 + 15900, 12800)
    assert known["order_no"] not in str(run.differences)
    assert run.alerted is True and alerts() == 1


def test_reconcile_paid_row_wechat_never_saw_is_missing_wechat(api, address, make_sku, place_order, client, alerts):
    """A notification WeChat never sent (signed with a leaked key) marks an order paid: only the
    bill can tell. The sandbox has no paid trade today, so it answers No Bill Exist."""
    order = place_order(api, items=[(make_sku(price_fen=23300), 1)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")  # NOTPAY at WeChat
    fields = {
        "appid": settings.WECHAT_APPID,
        "mch_id": settings.WECHAT_MCH_ID,
        "nonce_str": "forged",
        "result_code": "SUCCESS",
        "return_code": "SUCCESS",
        "openid": "oX",
        "trade_type": "JSAPI",
        "bank_type": "OTHERS",
        "total_fee": "23300",
        "cash_fee": "23300",
        "out_trade_no": order["order_no"],
        "transaction_id": "4200009999202611309999999999",
        "time_end": timezone.localtime().strftime("%Y%m%d%H%M%S"),
    }
    fields["sign"] = calculate_signature(fields, settings.WECHAT_PAY_API_KEY)
    body = "<xml>" + "".join(f"<{k}><![CDATA[{v}]]></{k}>" for k, v in fields.items()) + "</xml>"
    assert b"SUCCESS" in client.post("/api/v1/payments/wechat/notify", data=body, content_type="text/xml").content
    assert Payment.objects.get(out_trade_no=order["order_no"]).status == "paid"

    run = reconcile(bill_date=today())

    assert run.status == "differences"
    assert run.differences == [
        {
            "kind": "missing_wechat",
            "out_trade_no": order["order_no"],
            "out_refund_no": "",
            "wechat_fen": None,
            "local_fen": 23300,
            "wechat_status": "",
            "local_status": "paid",
        }
    ]
    assert (run.wechat_count, run.local_count, run.wechat_fen, run.local_fen) == (0, 1, 0, 23300)
    assert alerts() == 1


def test_reconcile_amount_difference(pay, alerts):
    order = pay(12800)
    # The local row changed after payment (a manual fix, a bad data migration): WeChat took 12800.
    Payment.objects.filter(out_trade_no=order["order_no"]).update(total_fee=F("total_fee") - 100)

    run = reconcile(bill_date=today())

    assert run.differences == [
        {
            "kind": "amount",
            "out_trade_no": order["order_no"],
            "out_refund_no": "",
            "wechat_fen": 12800,
            "local_fen": 12700,
            "wechat_status": "SUCCESS",
            "local_status": "paid",
        }
    ]
    assert (run.wechat_count, run.local_count, run.wechat_fen, run.local_fen) == (1, 1, 12800, 12700)
    assert run.status == "differences" and alerts() == 1


def test_reconcile_refund_status_differences(pay, refund, wechat):
    first, second = pay(12800), pay(20000)
    refunded = refund(first, 3000)  # SUCCESS at WeChat at once; its notification is never delivered
    wechat.state.config.refund_delay_seconds = 3600
    closed = refund(second, 4000)
    wechat.control.settle_refunds(closed.out_refund_no, status="REFUNDCLOSE")  # notice not delivered either

    run = reconcile(bill_date=today())

    assert run.differences == sorted(
        [
            {
                "kind": "status",
                "out_trade_no": first["order_no"],
                "out_refund_no": refunded.out_refund_no,
                "wechat_fen": 3000,
                "local_fen": 3000,
                "wechat_status": "SUCCESS",
                "local_status": "submitted",
            },
            {
                "kind": "status",
                "out_trade_no": second["order_no"],
                "out_refund_no": closed.out_refund_no,
                "wechat_fen": 4000,
                "local_fen": 4000,
                "wechat_status": "REFUNDCLOSE",
                "local_status": "submitted",
            },
        ],
        key=lambda d: d["out_refund_no"],
    )  # sorted by key
    assert (run.wechat_count, run.local_count) == (4, 4)
    # WeChat gave 4000 back when it closed the refund; we still count it as leaving.
    assert (run.wechat_fen, run.local_fen) == (32800 - 3000, 32800 - 3000 - 4000)


def test_reconcile_refund_we_do_not_know_and_refund_wechat_does_not_know(pay, refund, wechat, deliver):
    order = pay(12800)
    foreign = refund(order, 1000)
    assert all(a["ok"] for a in deliver())
    Refund.objects.filter(pk=foreign.pk).delete()  # refunded at WeChat, no row here (e.g. merchant platform)
    ours = refund(order, 2000)
    with wechat.state.lock:
        wechat.state.refunds.pop(ours.out_refund_no)  # as if WeChat never registered it

    run = reconcile(bill_date=today())

    assert [(d["kind"], d["out_refund_no"], d["wechat_fen"], d["local_fen"]) for d in run.differences] == [
        ("missing_local", foreign.out_refund_no, 1000, None),
        ("missing_wechat", ours.out_refund_no, None, 2000),
    ]
    assert all(d["out_trade_no"] == order["order_no"] for d in run.differences)
    assert (run.wechat_count, run.local_count) == (2, 2)
    assert (run.wechat_fen, run.local_fen) == (12800 - 1000, 12800 - 2000)


def test_reconcile_rerun_replaces_the_row_and_alerts_once(pay, deliver, alerts):
    lost = pay(15900, notify=False)
    first = reconcile(bill_date=today())
    second = reconcile(bill_date=today())  # beat retried, or staff clicked again

    assert ReconciliationRun.objects.count() == 1 and second.pk == first.pk
    assert second.status == "differences" and len(second.differences) == 1 and second.alerted is True
    assert second.checked_at >= first.checked_at
    assert alerts() == 1

    assert [a["ok"] for a in deliver()] == [True]  # the notification finally arrives
    fixed = reconcile(bill_date=today())
    assert fixed.pk == first.pk and fixed.status == "ok" and fixed.differences == []
    assert (fixed.wechat_fen, fixed.local_fen, fixed.alerted) == (15900, 15900, False)
    assert Payment.objects.get(out_trade_no=lost["order_no"]).status == "paid"
    assert alerts() == 1


def test_reconcile_no_bill_and_no_payments_is_ok(alerts):
    run = reconcile(bill_date=today())
    assert (run.status, run.wechat_count, run.local_count, run.wechat_fen, run.local_fen) == ("ok", 0, 0, 0, 0)
    assert run.differences == [] and alerts() == 0


def test_reconcile_wechat_unreachable_is_error_stored_and_alerted_once(pay, settings, wechat, alerts):
    pay(15900, notify=False)
    settings.WECHAT_PAY_API_BASE = "http://127.0.0.1:9/"
    for _ in range(2):
        run = reconcile(bill_date=today())
    stored = ReconciliationRun.objects.get()
    assert (stored.pk, stored.status, stored.alerted) == (run.pk, "error", True)
    assert stored.error.startswith("PayUnavailable:") and stored.differences == []
    assert alerts() == 1

    # WeChat is back: the error turns into the day's real result, which is alerted on its own.
    settings.WECHAT_PAY_API_BASE = wechat.url
    for _ in range(2):
        run = reconcile(bill_date=today())
    assert (run.status, run.error, len(run.differences), run.alerted) == ("differences", "", 1, True)
    assert alerts() == 2


def test_reconcile_refused_bill_is_error(wechat, alerts):
    wechat.control.set_faults({"pay/downloadbill": {"system_error": True, "count": 1}})
    run = reconcile(bill_date=today())
    assert run.status == "error" and run.error.startswith("PayRejected:") and alerts() == 1


def test_reconcile_cuts_days_in_beijing_time(pay, wechat):
    yesterday = today() - dt.timedelta(days=1)
    late_evening = dt.datetime.combine(yesterday, dt.time(23, 59, 30), tzinfo=reconciliation.BEIJING).timestamp()
    wechat.state.clock = lambda: late_evening  # the user pays 30 s before midnight, Beijing time
    order = pay(12800)
    payment = Payment.objects.get(out_trade_no=order["order_no"])
    assert timezone.localtime(payment.paid_at) == dt.datetime.combine(
        yesterday, dt.time(23, 59, 30), tzinfo=reconciliation.BEIJING
    )

    previous = reconcile(bill_date=yesterday)
    assert (previous.status, previous.wechat_count, previous.local_count, previous.wechat_fen, previous.local_fen) == (
        "ok",
        1,
        1,
        12800,
        12800,
    )
    current = reconcile(bill_date=today())
    assert (current.status, current.wechat_count, current.local_count, current.local_fen) == ("ok", 0, 0, 0)


def test_reconcile_previous_day_takes_yesterday_and_retries_failed_days(pay, settings, wechat):
    pay(12800)
    settings.WECHAT_PAY_API_BASE = "http://127.0.0.1:9/"
    assert reconcile(bill_date=today()).status == "error"
    settings.WECHAT_PAY_API_BASE = wechat.url

    tomorrow = today() + dt.timedelta(days=1)
    run = reconciliation.reconcile_previous_day(today=tomorrow + dt.timedelta(days=1))  # yesterday = tomorrow
    assert run.bill_date == tomorrow and run.status == "ok"
    retried = ReconciliationRun.objects.get(bill_date=today())  # the failed day, fetched again
    assert (retried.status, retried.wechat_fen, retried.local_fen) == ("ok", 12800, 12800)


def test_reconcile_daily_task_reconciles_yesterday():
    assert reconcile_daily() == "ok"
    assert ReconciliationRun.objects.get().bill_date == reconciliation.previous_day()


def test_reconcile_command(pay):
    lost = pay(15900, notify=False)
    out, err = io.StringIO(), io.StringIO()
    call_command("reconcile", "--date", today().isoformat(), stdout=out, stderr=err)
    assert out.getvalue().splitlines() == [
        f"{today()}: differences; WeChat 1 lines 15900 fen, local 0 rows 0 fen, 1 differences"
    ]  # one line on stdout, for scripts; the differences on stderr
    assert err.getvalue().splitlines() == [
        f"  missing_local  {lost['order_no']} - WeChat 15900 fen SUCCESS / local - fen pending"
    ]
    with pytest.raises(CommandError, match="not a date"):
        call_command("reconcile", "--date", "30/11/2026")


def test_reconcile_command_exits_non_zero_when_wechat_is_down(settings):
    settings.WECHAT_PAY_API_BASE = "http://127.0.0.1:9/"
    with pytest.raises(CommandError, match="PayUnavailable"):
        call_command("reconcile", stdout=io.StringIO())
    assert ReconciliationRun.objects.get().status == "error"


def test_admin_lists_shows_and_reruns_a_day(admin_client, pay, deliver):
    lost = pay(15900, notify=False)
    run = reconcile(bill_date=today())

    listing = admin_client.get("/admin/payments/reconciliationrun/", {"status__exact": "differences"})
    assert listing.status_code == 200 and "有差异" in listing.content.decode()
    detail = admin_client.get(f"/admin/payments/reconciliationrun/{run.pk}/change/").content.decode()
    assert lost["order_no"] in detail and "159.00" in detail and "微信有、本地无" in detail
    assert admin_client.get("/admin/payments/reconciliationrun/add/").status_code == 403

    deliver()
    response = admin_client.post(
        "/admin/payments/reconciliationrun/", {"action": "reconcile_again", "_selected_action": [run.pk]}, follow=True
    )
    assert response.status_code == 200 and f"{today()}: 一致" in response.content.decode()
    run.refresh_from_db()
    assert (run.status, run.differences, run.wechat_fen, run.local_fen) == ("ok", [], 15900, 15900)


def _foreign_payment(out_trade_no: str, total_fee: int) -> None:
    """A payment at WeChat under a number we never issued (another system on the same merchant
    account, a test from the merchant platform): the bill is the only place it shows up."""
    from apps.payments import wechat as wechat_pay

    now = timezone.now()
    wechat_pay.unified_order(
        out_trade_no=out_trade_no,
        total_fee=total_fee,
        body="外部订单",
        openid="oForeign",
        starts_at=now,
        expires_at=now + dt.timedelta(minutes=30),
    )


def test_reconcile_payment_under_a_number_we_never_issued_is_missing_local(wechat):
    _foreign_payment("EXT20261130001", 4321)
    wechat.control.pay("EXT20261130001")

    run = reconcile(bill_date=today())

    assert run.differences == [
        {
            "kind": "missing_local",
            "out_trade_no": "EXT20261130001",
            "out_refund_no": "",
            "wechat_fen": 4321,
            "local_fen": None,
            "wechat_status": "SUCCESS",
            "local_status": "",
        }
    ]
    assert (run.wechat_count, run.local_count, run.wechat_fen, run.local_fen) == (1, 0, 4321, 0)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_reconcile_racing_runs_of_one_day_store_one_row_and_alert_once(wechat, race, alerts):
    _foreign_payment("EXT20261130002", 100)
    wechat.control.pay("EXT20261130002")

    results = race(lambda i: reconcile(bill_date=today()).status, 6)

    assert results == ["differences"] * 6
    assert ReconciliationRun.objects.count() == 1 and ReconciliationRun.objects.get().alerted is True
    assert alerts() == 1
