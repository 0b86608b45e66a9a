"""pay/downloadbill: WeChat's text bill of a day's trades."""

import pytest
from sandbox_helpers import paid_order
from wechatpy.exceptions import WeChatPayException

from wechat_sandbox import bill, wire


def today(sandbox) -> str:
    return wire.beijing(sandbox.state.clock()).strftime("%Y%m%d")


def parse(text: str) -> tuple[list[str], list[list[str]], list[str], list[str]]:
    lines = text.split("\r\n")
    assert lines[-1] == ""  # CRLF-terminated
    header, *rows, summary_header, summary, _ = lines
    for line in rows + [summary]:
        assert all(cell.startswith("`") for cell in line.split(","))
    return (
        header.split(","),
        [[c[1:] for c in r.split(",")] for r in rows],
        summary_header.split(","),
        [c[1:] for c in summary.split(",")],
    )


def test_downloadbill_all_lists_payments_and_refunds(sandbox, wxpay):
    t1 = paid_order(wxpay, sandbox, "SM1", total_fee=19900, attach="a1")
    paid_order(wxpay, sandbox, "SM2", total_fee=1000)
    wxpay.refund.apply(total_fee=19900, refund_fee=5000, out_refund_no="RF1", out_trade_no="SM1")
    text = wxpay.tools.download_bill(today(sandbox))
    header, rows, summary_header, summary = parse(text)
    assert header == bill.ALL_COLUMNS and len(header) == 27
    assert summary_header == bill.SUMMARY_COLUMNS
    first = dict(zip(header, rows[0]))
    assert first["微信订单号"] == t1["transaction_id"] and first["商户订单号"] == "SM1"
    assert (first["交易状态"], first["应结订单金额"], first["订单金额"]) == ("SUCCESS", "199.00", "199.00")
    assert (first["公众账号ID"], first["商户号"]) == ("wx8d5f3c1a2b4e6f70", "1900000109")
    assert (first["手续费"], first["费率"], first["商户数据包"]) == ("1.19", "0.60%", "a1")
    assert first["交易时间"] == wire.dashed_time(sandbox.state.trades["SM1"].paid_at)
    refund = dict(zip(header, rows[2]))
    assert (refund["交易状态"], refund["退款金额"], refund["商户退款单号"]) == ("REFUND", "50.00", "RF1")
    assert refund["退款状态"] == "SUCCESS" and refund["手续费"] == "-0.30"
    # 3 rows; settled 199.00 + 10.00; refunds 50.00; fees 1.19 + 0.06 - 0.30; orders 209.00
    assert summary == ["3", "209.00", "50.00", "0.00", "0.95", "209.00", "50.00"]


def test_downloadbill_success_and_refund_types(sandbox, wxpay):
    paid_order(wxpay, sandbox, "SM1", total_fee=100)
    wxpay.refund.apply(total_fee=100, refund_fee=100, out_refund_no="RF1", out_trade_no="SM1")
    header, rows, _, summary = parse(wxpay.tools.download_bill(today(sandbox), bill_type="SUCCESS"))
    assert header == bill.SUCCESS_COLUMNS and [r[9] for r in rows] == ["SUCCESS"]
    header, rows, _, summary = parse(wxpay.tools.download_bill(today(sandbox), bill_type="REFUND"))
    assert header == bill.REFUND_COLUMNS and len(rows) == 1
    row = dict(zip(header, rows[0]))
    assert (row["交易状态"], row["退款金额"], row["退款成功时间"] != "") == ("REFUND", "1.00", True)
    assert summary[0] == "1" and summary[2] == "1.00"


def test_downloadbill_no_trades_no_bill_exist(sandbox, wxpay):
    with pytest.raises(WeChatPayException) as exc:
        wxpay.tools.download_bill(today(sandbox))
    assert (exc.value.return_code, exc.value.return_msg) == ("FAIL", "No Bill Exist")
    paid_order(wxpay, sandbox, "SM1")
    with pytest.raises(WeChatPayException) as exc:
        wxpay.tools.download_bill("20200101")
    assert exc.value.return_msg == "No Bill Exist"


def test_downloadbill_invalid_date_or_type(sandbox, wxpay):
    for kwargs in (
        {"bill_date": "2026-11-30"},
        {"bill_date": "20261332"},
        {"bill_date": today(sandbox), "bill_type": "WHATEVER"},
    ):
        with pytest.raises(WeChatPayException) as exc:
            wxpay.tools.download_bill(**kwargs)
        assert exc.value.return_code == "FAIL" and exc.value.return_msg.startswith("invalid")


def test_fee_fen_rounds_half_up():
    assert [bill.fee_fen(f) for f in (100, 1000, 19900, 83, 84, 5000)] == [1, 6, 119, 0, 1, 30]
