"""Excel exports stream: the .xlsx is a zip built as the rows are read (the first bytes leave before
the last row is), every cell typed as the exports' rules say (text inline and neutralised, XML's
special characters kept, control characters dropped, yuan numbers, Beijing date-times, nothing an
empty cell), a valid zip that openpyxl opens; past Excel's rows per sheet, further sheets."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import zipfile
from decimal import Decimal

import pytest
from django.http import StreamingHttpResponse
from openpyxl import load_workbook

from apps.backoffice import exports
from apps.backoffice.selectors import SHANGHAI
from apps.orders.models import Order, OrderStatus
from starmall import xlsx_stream

URL = "/admin/backoffice/export/"
TRICKY = '<b>&"青瓷"</b>\x07 盖碗'  # XML's specials, Chinese, a BEL an XML file cannot hold


def _book(data: bytes):
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.testzip() is None  # every member's CRC checks
    return load_workbook(io.BytesIO(data))


def test_cells_keep_their_types_and_text():
    created = dt.datetime(2026, 11, 30, 15, 30, 15, tzinfo=dt.UTC)  # 23:30:15 in Beijing
    rows = [
        ["文本", "金额（元）", "时间", "日期", "空", "空文本", "数", "是否"],
        [TRICKY, Decimal("-0.45"), created, dt.date(2026, 11, 30), None, "", 7, True],
        ["=1+1", Decimal("123.45"), None, None, " 前后空格 ", "\x01", 2**40, False],
    ]
    sheet = _book(b"".join(xlsx_stream.xlsx_chunks(iter(rows), "订单"))).active
    assert sheet.title == "订单" and sheet.max_row == 3 and sheet.max_column == 8
    assert [cell.value for cell in sheet[1]] == rows[0]
    text, amount, when, day, empty, blank, count, flag = sheet[2]
    assert text.value == '<b>&"青瓷"</b> 盖碗' and text.data_type == "s"
    assert amount.value == -0.45 and amount.data_type == "n" and amount.number_format == "0.00"
    assert when.is_date and when.value == dt.datetime(2026, 11, 30, 23, 30, 15)
    assert when.number_format == "yyyy-mm-dd hh:mm"
    assert day.is_date and day.value == dt.datetime(2026, 11, 30) and day.number_format == "yyyy-mm-dd"
    assert empty.value is None and blank.value is None
    assert count.value == 7 and count.data_type == "n" and flag.value is True
    formula, amount, when, day, spaced, control, big, flag = sheet[3]
    assert formula.value == "'=1+1" and formula.data_type == "s"  # neutralised, never a formula
    assert amount.value == 123.45 and when.value is None and day.value is None
    assert spaced.value == " 前后空格 " and control.value is None  # nothing left once cleaned: empty
    assert big.value == 2**40 and flag.value is False


def _recorded(total: int, seen: list[int]):
    """The header and ``total`` rows of hard-to-compress text; ``seen[0]``: rows handed out so far."""
    yield ["编号", "摘要", "金额（元）"]
    for n in range(total):
        seen[0] = n + 1
        yield [n, hashlib.sha256(str(n).encode()).hexdigest() * 2, Decimal(n).scaleb(-2)]


def _streamed(chunks, seen: list[int]) -> tuple[bytes, list[int]]:
    """The whole file, and how many rows had been read when each chunk came out."""
    data, progress = [], []
    for chunk in chunks:
        data.append(chunk)
        progress.append(seen[0])
    return b"".join(data), progress


def test_the_first_bytes_leave_before_the_rows_are_all_read():
    seen = [0]
    chunks = xlsx_stream.xlsx_chunks(_recorded(20000, seen), "订单")
    assert seen[0] == 0  # nothing read before the response is iterated
    data, progress = _streamed(chunks, seen)
    assert data.startswith(b"PK\x03\x04") and progress[0] < 20000
    # the sheet itself flows out while rows remain: chunks come out a quarter of the way in
    assert any(0 < done < 20000 / 4 for done in progress)
    sheet = _book(data).active
    assert seen[0] == 20000 and sheet.max_row == 20001
    assert sheet["A20001"].value == 19999 and sheet["C20001"].value == 199.99


def test_rows_past_excels_limit_go_on_to_further_sheets(monkeypatch):
    monkeypatch.setattr(xlsx_stream, "MAX_ROWS", 3)  # the header and two rows per sheet
    rows = [["编号"], *([n] for n in range(5))]
    book = _book(b"".join(xlsx_stream.xlsx_chunks(iter(rows), "订单/退款")))
    assert book.sheetnames == ["订单_退款", "订单_退款 (2)", "订单_退款 (3)"]
    assert [[cell.value for cell in row] for sheet in book for row in sheet.iter_rows()] == [
        ["编号"],
        [0],
        [1],
        ["编号"],
        [2],
        [3],
        ["编号"],
        [4],
    ]


def test_an_empty_source_is_still_a_workbook():
    sheet = _book(b"".join(xlsx_stream.xlsx_chunks(iter([["订单号", "金额"]]), "订单"))).active
    assert [cell.value for cell in sheet[1]] == ["订单号", "金额"] and sheet.max_row == 1


def _order(customer, no: str, created: dt.datetime, remark: str = "") -> None:
    order = Order.objects.create(
        order_no=no,
        order_key=no,
        customer=customer,
        status=OrderStatus.UNPAID,
        goods_fen=12345,
        pay_fen=12345,
        pay_deadline=created,
        remark=remark,
    )
    Order.objects.filter(pk=order.pk).update(created_at=created)


@pytest.mark.django_db
def test_the_orders_export_streams_every_order_of_the_range(role_client, customer):
    day = dt.datetime(2026, 11, 30, 12, 0, tzinfo=SHANGHAI)
    for n in range(5):
        _order(customer, f"XS{n}", day + dt.timedelta(minutes=n), remark=TRICKY if n == 0 else "")
    _order(customer, "XSOUT", day + dt.timedelta(days=1))
    response = role_client("财务").get(
        URL, {"kind": "orders", "start": "2026-11-30", "end": "2026-11-30", "fmt": "xlsx"}
    )
    assert isinstance(response, StreamingHttpResponse) and response.status_code == 200
    assert response["Content-Type"] == xlsx_stream.CONTENT_TYPE
    assert response["Content-Disposition"] == 'attachment; filename="orders-20261130-20261130.xlsx"'
    sheet = _book(b"".join(response.streaming_content)).active
    assert sheet.title == "订单" and sheet.max_row == 1 + 5
    header = [cell.value for cell in sheet[1]]
    table = [dict(zip(header, row, strict=True)) for row in sheet.iter_rows(min_row=2)]
    assert [row["订单号"].value for row in table] == [f"XS{n}" for n in range(5)]
    assert table[0]["顾客备注"].value == '<b>&"青瓷"</b> 盖碗' and table[1]["顾客备注"].value is None
    assert table[4]["下单时间（北京时间）"].value == dt.datetime(2026, 11, 30, 12, 4)
    assert table[0]["实付（元）"].value == 123.45 and table[0]["支付时间（北京时间）"].value is None


@pytest.mark.django_db
def test_the_view_sends_its_first_chunk_before_the_rows_run_out(role_client, monkeypatch):
    seen = [0]
    monkeypatch.setattr(exports, "rows", lambda kind, start, end: _recorded(20000, seen))
    response = role_client("财务").get(
        URL, {"kind": "orders", "start": "2026-11-01", "end": "2026-11-30", "fmt": "xlsx"}
    )
    assert response.streaming and seen[0] == 0
    data, progress = _streamed(response.streaming_content, seen)
    assert progress[0] < 20000 and any(0 < done < 20000 / 4 for done in progress)
    assert _book(data).active.max_row == 20001
