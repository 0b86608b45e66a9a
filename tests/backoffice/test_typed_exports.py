"""Exports are typed spreadsheets: yuan as numbers shown 0.00 (headers say 元), times as real Excel
date-times in Beijing time (headers say 北京时间), dates as dates, nothing as an EMPTY cell (never
"-" or "'-"), counts as integers; text that starts like a formula is still neutralised. The CSV
leaves nothing empty too."""

from __future__ import annotations

import csv
import datetime as dt
import io
from decimal import Decimal

import pytest
from openpyxl import load_workbook

from apps.backoffice.selectors import SHANGHAI
from apps.orders.models import Order, OrderStatus
from apps.payments.models import ReconciliationRun
from starmall.spreadsheet import csv_cell

pytestmark = pytest.mark.django_db
URL = "/admin/backoffice/export/"
DAY = dt.date(2026, 11, 30)


def _get(client, kind: str, fmt: str) -> bytes:
    response = client.get(URL, {"kind": kind, "start": DAY.isoformat(), "end": DAY.isoformat(), "fmt": fmt})
    assert response.status_code == 200
    return b"".join(response.streaming_content)


@pytest.fixture
def unpaid_order(customer):
    """An unpaid order created 2026-11-30 23:30 Beijing (15:30 UTC): no payment or ship time, no
    address, a nickname starting with "-"."""
    created = dt.datetime(2026, 11, 30, 23, 30, 15, tzinfo=SHANGHAI)
    customer.nickname = "-小明"
    customer.save(update_fields=["nickname"])
    order = Order.objects.create(
        order_no="TYPED1",
        order_key="TYPED1",
        customer=customer,
        status=OrderStatus.UNPAID,
        goods_fen=12345,
        coupon_fen=0,
        adjust_fen=-45,
        pay_fen=12300,
        pay_deadline=created,
    )
    Order.objects.filter(pk=order.pk).update(created_at=created)
    return order


def test_orders_xlsx_cells_are_typed(role_client, unpaid_order):
    sheet = load_workbook(io.BytesIO(_get(role_client("财务"), "orders", "xlsx"))).active
    header = [cell.value for cell in sheet[1]]
    row = {name: cell for name, cell in zip(header, sheet[2], strict=True)}
    assert sheet.max_row == 2

    goods, adjust, pay = row["商品金额（元）"], row["改价调整（元）"], row["实付（元）"]
    assert (goods.value, adjust.value, pay.value) == (123.45, -0.45, 123)
    assert {goods.data_type, adjust.data_type, pay.data_type} == {"n"}
    assert {goods.number_format, adjust.number_format, pay.number_format} == {"0.00"}
    assert row["优惠券（元）"].value == 0 and row["优惠券（元）"].data_type == "n"

    created = row["下单时间（北京时间）"]
    assert created.is_date and created.value == dt.datetime(2026, 11, 30, 23, 30, 15)  # Beijing, naive
    assert created.number_format == "yyyy-mm-dd hh:mm"
    for empty in (
        "支付时间（北京时间）",
        "发货时间（北京时间）",
        "收货地址",
        "快递公司",
        "快递单号",
        "顾客备注",
        "商家备注",
    ):
        assert row[empty].value is None, empty  # an empty cell, not "-" or "'-"

    assert row["顾客"].value == "'-小明" and row["顾客"].data_type == "s"  # text is still neutralised
    assert not any(cell.data_type == "f" for cell in sheet[2])


def test_orders_csv_leaves_nothing_empty(role_client, unpaid_order):
    table = list(csv.reader(io.StringIO(_get(role_client("财务"), "orders", "csv").decode("utf-8-sig"))))
    row = dict(zip(table[0], table[1], strict=True))
    assert row["支付时间（北京时间）"] == "" and row["收货地址"] == "" and row["快递单号"] == ""
    assert row["下单时间（北京时间）"] == "2026-11-30 23:30"
    assert row["改价调整（元）"] == "-0.45" and row["优惠券（元）"] == "0.00"
    assert row["顾客"] == "'-小明"


def test_reconciliation_xlsx_has_a_date_integers_and_yuan(role_client):
    ReconciliationRun.objects.create(
        bill_date=DAY,
        status=ReconciliationRun.Status.OK,
        wechat_count=3,
        local_count=3,
        wechat_fen=30000,
        local_fen=30000,
    )
    sheet = load_workbook(io.BytesIO(_get(role_client("财务"), "reconciliation", "xlsx"))).active
    date, count, amount, error = sheet["A2"], sheet["C2"], sheet["E2"], sheet["H2"]
    assert date.is_date and date.value == dt.datetime(2026, 11, 30) and date.number_format == "yyyy-mm-dd"
    assert count.value == 3 and count.data_type == "n"
    assert amount.value == 300 and amount.number_format == "0.00"
    assert error.value is None


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, ""),
        ("", ""),
        (Decimal("-0.45"), "-0.45"),
        (7, "7"),
        (dt.datetime(2026, 11, 30, 15, 30, tzinfo=dt.UTC), "2026-11-30 23:30"),
        (dt.date(2026, 11, 30), "2026-11-30"),
        ("=1+1", "'=1+1"),
        ("\t-1", "'\t-1"),
    ],
)
def test_csv_cell(value, text):
    assert csv_cell(value) == text
