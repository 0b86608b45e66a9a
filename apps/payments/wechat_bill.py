"""WeChat Pay's bill of a day (``pay/downloadbill``, API v2 "下载对账单", bill_type ALL) parsed.

The text (see docs WECHAT.md and ``wechat_sandbox/bill.py``): a header line of column names,
one line per trade or refund with every field prefixed by a backtick, then a summary header
(总交易单数,应结订单总金额,退款总金额,...) and one summary line. Amounts are yuan with two
decimals, read into integer fen through ``Decimal``, never float. The lines are checked
against the summary (row count and every amount column, to the fen) before anyone compares
them: :mod:`apps.payments.reconciliation` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

# Summary column -> the per-row column it totals (WeChat's bill layout).
_SUMMARY_OF = {
    "应结订单总金额": "应结订单金额",
    "退款总金额": "退款金额",
    "充值券退款总金额": "充值券退款金额",
    "手续费总金额": "手续费",
    "订单总金额": "订单金额",
    "申请退款总金额": "申请退款金额",
}
_REQUIRED_COLUMNS = ("交易状态", "微信订单号", "商户订单号", "商户退款单号", "应结订单金额", "退款金额")


class BillFormatError(ValueError):
    """The bill text is not WeChat's layout, or does not add up to its own summary line."""


@dataclass(frozen=True)
class BillTrade:
    """A payment line of the bill. ``total_fen``: the order amount (订单金额, i.e. WeChat's
    total_fee) in fen; older bills without that column give 应结订单金额."""

    out_trade_no: str
    transaction_id: str
    trade_state: str  # SUCCESS (paid that day); REVOKED... for other trade types
    total_fen: int
    traded_at: str  # "yyyy-MM-dd HH:mm:ss", Beijing


@dataclass(frozen=True)
class BillRefund:
    """A refund line of the bill (交易状态 REFUND). ``refund_fen``: the refund asked for
    (申请退款金额) in fen; older bills without that column give 退款金额."""

    out_trade_no: str
    transaction_id: str
    out_refund_no: str
    refund_id: str
    refund_fen: int
    refund_status: str  # SUCCESS, PROCESSING, REFUNDCLOSE, CHANGE
    trade_state: str  # "REFUND"


@dataclass(frozen=True)
class Bill:
    """A parsed bill: its lines, in bill order, and the summary as read (amounts in fen)."""

    trades: tuple[BillTrade, ...] = ()
    refunds: tuple[BillRefund, ...] = ()
    summary: dict[str, int] = field(default_factory=dict)

    @property
    def row_count(self) -> int:
        return len(self.trades) + len(self.refunds)


def yuan_to_fen(text: str) -> int:
    """``"1234.56"`` -> ``123456``, exactly (Decimal); ``""`` -> 0; negative allowed (fees).

    Raises BillFormatError for anything that is not a yuan amount with at most 2 decimals.
    """
    text = text.strip()
    if not text:
        return 0
    try:
        fen = Decimal(text) * 100
    except InvalidOperation as exc:
        raise BillFormatError(f"not an amount in yuan: {text!r}") from exc
    if not fen.is_finite() or fen != fen.to_integral_value():
        raise BillFormatError(f"not an amount in yuan with 2 decimals: {text!r}")
    return int(fen)


def _cells(line: str) -> list[str]:
    """The fields of a bill line. Each field starts with a backtick, so fields are split on
    ",`" (a comma inside a product name stays in its field)."""
    if not line.startswith("`"):
        raise BillFormatError(f"bill line without the backtick prefix: {line[:80]!r}")
    return line[1:].split(",`")


def parse_bill(text: str) -> Bill:
    """Parse WeChat's ALL bill (``pay/downloadbill`` text) into payment and refund lines in fen.

    ``""`` (WeChat has no bill: no trade that day) is an empty Bill. The lines must add up to
    the summary line to the fen (count and every amount column), so a truncated or garbled
    download is refused rather than compared. Raises BillFormatError.
    """
    lines = [ln for ln in text.lstrip("\ufeff").replace("\r\n", "\n").split("\n") if ln.strip()]
    if not lines:
        return Bill()
    header = _header(lines[0])
    summary_at = _summary_at(lines)
    summary_cells = _summary_cells(lines[summary_at], lines[summary_at + 1])
    rows = _rows(header, lines[1:summary_at])
    summary = _summary(summary_cells)
    _check_totals(header, rows, summary)
    trade_amount = "订单金额" if "订单金额" in header else "应结订单金额"
    refund_amount = "申请退款金额" if "申请退款金额" in header else "退款金额"
    trades, refunds = [], []
    for row in rows:
        if row["交易状态"] == "REFUND" or row["商户退款单号"] not in ("", "0"):
            refunds.append(_bill_refund(row, refund_amount))
        else:
            trades.append(_bill_trade(row, trade_amount))
    return Bill(trades=tuple(trades), refunds=tuple(refunds), summary=summary)


def _header(line: str) -> list[str]:
    """The column names of the bill's first line; BillFormatError if a required one is absent."""
    header = [c.lstrip("`").strip() for c in line.split(",")]
    missing = [c for c in _REQUIRED_COLUMNS if c not in header]
    if missing:
        raise BillFormatError(f"bill header lacks {', '.join(missing)}")
    return header


def _summary_at(lines: list[str]) -> int:
    """Index of the summary header line (总交易单数,...); BillFormatError if there is none, or
    nothing after it."""
    try:
        summary_at = next(i for i, ln in enumerate(lines) if ln.lstrip("`").startswith("总交易单数"))
    except StopIteration:
        raise BillFormatError("bill has no summary (总交易单数) line: truncated?") from None
    if summary_at + 1 >= len(lines):
        raise BillFormatError("bill summary header without its summary line")
    return summary_at


def _summary_cells(header_line: str, line: str) -> list[tuple[str, str]]:
    """The summary line as ``(column, raw value)`` pairs; BillFormatError if the two lines'
    field counts differ."""
    summary_header = [c.strip() for c in header_line.split(",")]
    summary_cells = _cells(line)
    if len(summary_cells) != len(summary_header):
        raise BillFormatError("bill summary line does not match its header")
    return list(zip(summary_header, summary_cells))


def _rows(header: list[str], lines: list[str]) -> list[dict[str, str]]:
    """The trade and refund lines as ``{column: stripped value}``; BillFormatError for a line
    whose field count is not the header's."""
    rows = []
    for line in lines:
        cells = _cells(line)
        if len(cells) != len(header):
            raise BillFormatError(f"bill line has {len(cells)} fields, header {len(header)}: {line[:80]!r}")
        rows.append(dict(zip(header, (c.strip() for c in cells))))
    return rows


def _summary(cells: list[tuple[str, str]]) -> dict[str, int]:
    """The summary's values: 总交易单数 a count, every other column fen."""
    summary: dict[str, int] = {}
    for name, value in cells:
        if name == "总交易单数":
            if not value.strip().isdigit():
                raise BillFormatError(f"bad 总交易单数: {value!r}")
            summary[name] = int(value)
        else:
            summary[name] = yuan_to_fen(value)
    return summary


def _check_totals(header: list[str], rows: list[dict[str, str]], summary: dict[str, int]) -> None:
    """BillFormatError unless the line count and every amount column the header has
    (``_SUMMARY_OF``) add up to the summary, to the fen."""
    if summary.get("总交易单数") != len(rows):
        raise BillFormatError(f"bill has {len(rows)} lines, its summary says {summary.get('总交易单数')}")
    for total_name, column in _SUMMARY_OF.items():
        if total_name in summary and column in header:
            added = sum(yuan_to_fen(row[column]) for row in rows)
            if added != summary[total_name]:
                raise BillFormatError(f"{column} lines add up to {added} fen, {total_name} says {summary[total_name]}")


def _bill_trade(row: dict[str, str], amount: str) -> BillTrade:
    """A payment line; ``amount``: the column that holds its total_fee."""
    return BillTrade(
        out_trade_no=row["商户订单号"],
        transaction_id=row["微信订单号"],
        trade_state=row["交易状态"],
        total_fen=yuan_to_fen(row[amount]),
        traded_at=row.get("交易时间", ""),
    )


def _bill_refund(row: dict[str, str], amount: str) -> BillRefund:
    """A refund line; ``amount``: the column that holds the refund asked for."""
    return BillRefund(
        out_trade_no=row["商户订单号"],
        transaction_id=row["微信订单号"],
        out_refund_no=row["商户退款单号"],
        refund_id=row.get("微信退款单号", ""),
        refund_fen=yuan_to_fen(row[amount]),
        refund_status=row.get("退款状态", ""),
        trade_state=row["交易状态"],
    )
