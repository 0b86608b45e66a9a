"""``pay/downloadbill``: a day's trade bill in WeChat's text format.

Layout (WeChat Pay V2 "下载对账单"): a header line, one line per trade with every field prefixed
by a backtick (so spreadsheets keep long numbers as text), then a summary header and one
summary line. Amounts are yuan with two decimals; times are Beijing time; lines end in CRLF.
A payment row counts on the day it was paid, a refund row on the day it was applied for.
The fee (手续费) is 0.60% of the amount, rounded half up to the fen; a refund gives it back.
"""

from __future__ import annotations

import re
from datetime import datetime

from . import wire
from .models import Refund, Trade
from .state import SandboxState

ALL_COLUMNS = (
    "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,"
    "交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,"
    "充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,"
    "费率备注"
).split(",")
SUCCESS_COLUMNS = (
    "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,"
    "交易状态,付款银行,货币种类,应结订单金额,代金券金额,商品名称,商户数据包,手续费,费率,"
    "订单金额,费率备注"
).split(",")
REFUND_COLUMNS = (
    "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,"
    "交易状态,付款银行,货币种类,应结订单金额,代金券金额,退款申请时间,退款成功时间,微信退款单号,"
    "商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,"
    "订单金额,申请退款金额,费率备注"
).split(",")
SUMMARY_COLUMNS = "总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额".split(
    ","
)
BILL_TYPES = ("ALL", "SUCCESS", "REFUND")
RATE = "0.60%"


class BillError(Exception):
    """No bill: answered as ``return_code`` FAIL with ``return_msg`` and ``error_code``."""

    def __init__(self, message: str, error_code: str) -> None:
        super().__init__(message)
        self.message = message
        self.error_code = error_code


def fee_fen(amount_fen: int) -> int:
    """WeChat's 0.6% fee on ``amount_fen``, rounded half up to the fen."""
    return (amount_fen * 6 + 500) // 1000


def _day(ts: float | None) -> str | None:
    return wire.beijing(ts).strftime("%Y%m%d") if ts is not None else None


def _common(state: SandboxState, trade: Trade) -> dict:
    return {
        "公众账号ID": state.config.appid,
        "商户号": state.config.mch_id,
        "特约商户号": "0",
        "设备号": trade.params.get("device_info", ""),
        "微信订单号": trade.transaction_id,
        "商户订单号": trade.out_trade_no,
        "用户标识": trade.openid,
        "交易类型": trade.params.get("trade_type", "JSAPI"),
        "付款银行": trade.bank_type,
        "货币种类": "CNY",
        "商品名称": trade.params.get("body", ""),
        "商户数据包": trade.params.get("attach", ""),
        "费率": RATE,
        "费率备注": "",
    }


def _payment_row(state: SandboxState, trade: Trade) -> dict:
    return {
        **_common(state, trade),
        "交易时间": wire.dashed_time(trade.paid_at),
        "交易状态": "SUCCESS",
        "应结订单金额": trade.total_fee,
        "代金券金额": trade.coupon_fee,
        "微信退款单号": "0",
        "商户退款单号": "0",
        "退款金额": 0,
        "充值券退款金额": 0,
        "退款类型": "",
        "退款状态": "",
        "手续费": fee_fen(trade.total_fee),
        "订单金额": trade.total_fee,
        "申请退款金额": 0,
    }


def _refund_row(state: SandboxState, trade: Trade, refund: Refund, bill_type: str) -> dict:
    row = {
        **_common(state, trade),
        "交易时间": wire.dashed_time(refund.created_at),
        "交易状态": "REFUND",
        "应结订单金额": 0,
        "代金券金额": 0,
        "微信退款单号": refund.refund_id,
        "商户退款单号": refund.out_refund_no,
        "退款金额": refund.refund_fee,
        "充值券退款金额": 0,
        "退款类型": "ORIGINAL",
        "退款状态": refund.status,
        "手续费": -fee_fen(refund.refund_fee),
        "订单金额": 0,
        "申请退款金额": refund.refund_fee,
        "退款申请时间": wire.dashed_time(refund.created_at),
        "退款成功时间": wire.dashed_time(refund.success_at) if refund.success_at else "",
    }
    if bill_type == "REFUND":  # the REFUND bill shows the original payment beside the refund
        row.update(
            {
                "交易时间": wire.dashed_time(trade.paid_at),
                "应结订单金额": trade.total_fee,
                "代金券金额": trade.coupon_fee,
                "订单金额": trade.total_fee,
            }
        )
    return row


def _line(values: list) -> str:
    return ",".join("`" + (wire.yuan(v) if isinstance(v, int) else str(v or "")) for v in values)


def render(state: SandboxState, bill_date: str, bill_type: str = "ALL", api: str | None = None) -> str:
    """The bill text of ``bill_date`` (``yyyyMMdd``, Beijing) for ``bill_type``; ``api`` ("v2"
    or "v3"): only the trades made through that Pay API and their refunds (the sandbox keeps
    each api's bill apart; real WeChat's is the merchant's whole day, which the shop also reads).

    Raises:
        BillError: bad date or type (error_code 20001), no trade that day (20002 No Bill Exist).
    """
    if not re.fullmatch(r"\d{8}", bill_date or ""):
        raise BillError("invalid bill_date", "20001")
    try:
        datetime.strptime(bill_date, "%Y%m%d")
    except ValueError as exc:
        raise BillError("invalid bill_date", "20001") from exc
    if bill_type not in BILL_TYPES:
        raise BillError("invalid bill_type", "20001")
    with state.lock:
        trades = sorted((t for t in state.trades.values() if api is None or t.api == api), key=lambda t: t.paid_at or 0)
        rows: list[dict] = []
        if bill_type in ("ALL", "SUCCESS"):
            rows += [_payment_row(state, t) for t in trades if t.paid_at is not None and _day(t.paid_at) == bill_date]
        if bill_type in ("ALL", "REFUND"):
            rows += [
                _refund_row(state, state.trades[r.out_trade_no], r, bill_type)
                for r in state.refunds.values()
                if _day(r.created_at) == bill_date and (api is None or state.trades[r.out_trade_no].api == api)
            ]
    if not rows:
        raise BillError("No Bill Exist", "20002")
    columns = {"ALL": ALL_COLUMNS, "SUCCESS": SUCCESS_COLUMNS, "REFUND": REFUND_COLUMNS}[bill_type]
    lines = [",".join(columns)]
    lines += [_line([row[c] for c in columns]) for row in rows]
    lines.append(",".join(SUMMARY_COLUMNS))
    total = sum(r["订单金额"] for r in rows)
    lines.append(
        "`"
        + str(len(rows))
        + ","
        + _line(
            [
                sum(r["应结订单金额"] for r in rows),
                sum(r["退款金额"] for r in rows),
                0,
                sum(r["手续费"] for r in rows),
                total,
                sum(r["申请退款金额"] for r in rows),
            ]
        )
    )
    return "\r\n".join(lines) + "\r\n"
