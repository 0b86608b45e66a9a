"""Refunds through wechatpy: idempotency, the sum rule, refundquery, the encrypted notice."""

import time

import pytest
from sandbox_helpers import (
    REFUND_NOTIFY_URL,
    Recorder,
    create_order,
    make_pay,
    paid_order,
)
from wechatpy.exceptions import WeChatPayException

from wechat_sandbox import DEMO_PAY_API_KEY, SandboxConfig, SandboxServer, wire


def apply(client, out_refund_no, refund_fee, total_fee=100, out_trade_no="SM1", **extra):
    return client.refund.apply(
        total_fee=total_fee, refund_fee=refund_fee, out_refund_no=out_refund_no, out_trade_no=out_trade_no, **extra
    )


def test_refund_same_out_refund_no_refunds_once(sandbox, wxpay):
    paid_order(wxpay, sandbox, "SM1", total_fee=100)
    first = apply(wxpay, "RF1", 40, notify_url=REFUND_NOTIFY_URL)
    second = apply(wxpay, "RF1", 40, notify_url=REFUND_NOTIFY_URL)
    assert first["refund_id"] == second["refund_id"] and len(first["refund_id"]) == 29
    assert (first["refund_fee"], first["total_fee"]) == ("40", "100")
    assert wire.verify_sign(first, DEMO_PAY_API_KEY)
    assert [r["refund_fee"] for r in sandbox.control.refunds()] == [40]
    assert len(sandbox.control.notifications(kind="refund")) == 1
    assert wxpay.order.query(out_trade_no="SM1")["trade_state"] == "REFUND"


def test_refund_same_out_refund_no_other_amount_mismatch(sandbox, wxpay):
    paid_order(wxpay, sandbox, "SM1")
    apply(wxpay, "RF1", 40)
    with pytest.raises(WeChatPayException) as exc:
        apply(wxpay, "RF1", 50)
    assert exc.value.errcode == "REFUND_FEE_MISMATCH"


def test_refund_sum_of_refunds_cannot_exceed_total_fee(sandbox, wxpay):
    paid_order(wxpay, sandbox, "SM1", total_fee=100)
    apply(wxpay, "RF1", 60)
    with pytest.raises(WeChatPayException) as exc:
        apply(wxpay, "RF2", 41)
    assert exc.value.errcode == "NOTENOUGH"
    apply(wxpay, "RF3", 40)
    with pytest.raises(WeChatPayException) as exc:
        apply(wxpay, "RF4", 1)
    assert (exc.value.errcode, exc.value.errmsg) == ("NOTENOUGH", "订单已全额退款")
    assert sum(r["refund_fee"] for r in sandbox.control.refunds()) == 100


def test_refund_fee_above_total_fee_invalid_request(sandbox, wxpay):
    paid_order(wxpay, sandbox, "SM1", total_fee=100)
    with pytest.raises(WeChatPayException) as exc:
        apply(wxpay, "RF1", 101)
    assert exc.value.errcode == "INVALID_REQUEST"
    with pytest.raises(WeChatPayException) as exc:
        apply(wxpay, "RF1", 10, total_fee=99)
    assert exc.value.errcode == "INVALID_REQUEST"
    assert sandbox.control.refunds() == []


def test_refund_unpaid_or_unknown_order_rejected(sandbox, wxpay):
    create_order(wxpay, "SM1")
    with pytest.raises(WeChatPayException) as exc:
        apply(wxpay, "RF1", 10)
    assert exc.value.errcode == "TRADE_STATE_ERROR"
    with pytest.raises(WeChatPayException) as exc:
        apply(wxpay, "RF1", 10, out_trade_no="NOPE")
    assert exc.value.errcode == "ORDERNOTEXIST"


def test_refund_notification_decrypts_with_wechatpy(sandbox, wxpay):
    trade = paid_order(wxpay, sandbox, "SM1", total_fee=300)
    refund = apply(wxpay, "RF1", 120, total_fee=300, notify_url=REFUND_NOTIFY_URL)
    recorder = Recorder()
    attempts = sandbox.deliver_pending(recorder)
    assert [a["ok"] for a in attempts] == [True, True]  # the payment notice, then the refund one
    url, body = recorder.calls[1]
    assert url == REFUND_NOTIFY_URL
    outer = wire.parse_xml(body)
    assert set(outer) == {"return_code", "appid", "mch_id", "nonce_str", "req_info"}
    info = wxpay.parse_refund_notify_result(body.decode())
    assert (info["out_trade_no"], info["out_refund_no"]) == ("SM1", "RF1")
    assert (info["refund_id"], info["transaction_id"]) == (refund["refund_id"], trade["transaction_id"])
    assert (info["total_fee"], info["refund_fee"], info["settlement_refund_fee"]) == (300, 120, 120)
    assert info["refund_status"] == "SUCCESS" and len(info["success_time"]) == 19
    assert info["refund_recv_accout"] and info["refund_request_source"] == "API"


def test_refund_without_notify_url_uses_configured_default(cert_pair):
    config = SandboxConfig(refund_notify_url=REFUND_NOTIFY_URL)
    with SandboxServer(config, auto_notify=False) as sandbox:
        client = make_pay(sandbox.url, cert=cert_pair)
        paid_order(client, sandbox, "SM1")
        apply(client, "RF1", 100)
        assert sandbox.control.notifications(kind="refund")[0]["url"] == REFUND_NOTIFY_URL


def test_refund_delay_processing_then_success(cert_pair):
    config = SandboxConfig(refund_delay_seconds=0.3)
    with SandboxServer(config, auto_notify=False) as sandbox:
        client = make_pay(sandbox.url, cert=cert_pair)
        paid_order(client, sandbox, "SM1")
        apply(client, "RF1", 100, notify_url=REFUND_NOTIFY_URL)
        assert client.refund.query(out_refund_no="RF1")["refund_status_0"] == "PROCESSING"
        assert sandbox.control.notifications(kind="refund") == []
        time.sleep(0.35)
        done = client.refund.query(out_refund_no="RF1")
        assert done["refund_status_0"] == "SUCCESS" and done["refund_success_time_0"]
        assert len(sandbox.control.notifications(kind="refund")) == 1


def test_refund_settle_refundclose_frees_the_amount(cert_pair):
    with SandboxServer(SandboxConfig(refund_delay_seconds=60), auto_notify=False) as sandbox:
        client = make_pay(sandbox.url, cert=cert_pair)
        paid_order(client, sandbox, "SM1")
        apply(client, "RF1", 100)
        settled = sandbox.control.settle_refunds("RF1", status="REFUNDCLOSE")
        assert [r["refund_status"] for r in settled] == ["REFUNDCLOSE"]
        assert apply(client, "RF2", 100)["refund_fee"] == "100"


def test_refundquery_lists_refunds_and_unknown_refundnotexist(sandbox, wxpay):
    trade = paid_order(wxpay, sandbox, "SM1", total_fee=100)
    first, second = apply(wxpay, "RF1", 30), apply(wxpay, "RF2", 20)
    listing = wxpay.refund.query(out_trade_no="SM1")
    assert listing["refund_count"] == "2" and listing["transaction_id"] == trade["transaction_id"]
    assert [listing["out_refund_no_0"], listing["out_refund_no_1"]] == ["RF1", "RF2"]
    assert [listing["refund_fee_0"], listing["refund_fee_1"]] == ["30", "20"]
    assert [listing["refund_id_0"], listing["refund_id_1"]] == [first["refund_id"], second["refund_id"]]
    assert listing["refund_status_0"] == "SUCCESS"
    one = wxpay.refund.query(refund_id=second["refund_id"])
    assert one["refund_count"] == "1" and one["out_refund_no_0"] == "RF2"
    assert wire.verify_sign(one, DEMO_PAY_API_KEY)
    with pytest.raises(WeChatPayException) as exc:
        wxpay.refund.query(out_refund_no="NOPE")
    assert exc.value.errcode == "REFUNDNOTEXIST"
