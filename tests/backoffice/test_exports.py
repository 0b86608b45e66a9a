"""Finance exports: CSV and Excel both streamed, a Shanghai date range, finance role only."""

import csv
import datetime as dt
import io

import pytest
from django.utils import timezone
from openpyxl import load_workbook

from apps.backoffice.selectors import SHANGHAI
from apps.orders.models import Order, OrderStatus

pytestmark = pytest.mark.django_db
URL = "/admin/backoffice/export/"


def _order(customer, no, pay_fen, created):
    order = Order.objects.create(
        order_no=no,
        order_key=no,
        customer=customer,
        status=OrderStatus.PAID,
        goods_fen=pay_fen,
        pay_fen=pay_fen,
        pay_deadline=created,
        paid_at=created,
        address={"name": "张三", "province": "上海市", "detail": "世纪大道1号"},
    )
    Order.objects.filter(pk=order.pk).update(created_at=created)


def test_finance_exports_orders_as_csv_and_excel_for_shanghai_days(role_client, customer):
    # 2026-11-30 23:30 Shanghai is inside the 30th; 2026-12-01 00:10 Shanghai is not.
    _order(customer, "IN1", 12345, dt.datetime(2026, 11, 30, 23, 30, tzinfo=SHANGHAI))
    _order(customer, "IN2", 100, dt.datetime(2026, 11, 29, 0, 0, tzinfo=SHANGHAI))
    _order(customer, "OUT", 500, dt.datetime(2026, 12, 1, 0, 10, tzinfo=SHANGHAI))
    client = role_client("财务")
    response = client.get(URL, {"kind": "orders", "start": "2026-11-29", "end": "2026-11-30", "fmt": "csv"})
    assert response.status_code == 200 and response.streaming
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    table = list(csv.reader(io.StringIO(text)))
    assert table[0][0] == "订单号"
    assert sorted(r[0] for r in table[1:]) == ["IN1", "IN2"]
    in1 = next(r for r in table if r[0] == "IN1")
    assert in1[8] == "123.45" and in1[10] == "2026-11-30 23:30" and in1[13] == "张三 上海市世纪大道1号"
    response = client.get(URL, {"kind": "orders", "start": "2026-11-29", "end": "2026-11-30", "fmt": "xlsx"})
    assert response.status_code == 200
    sheet = load_workbook(io.BytesIO(b"".join(response.streaming_content))).active
    values = list(sheet.iter_rows(values_only=True))
    assert len(values) == 3 and values[0][0] == "订单号"
    assert {row[0] for row in values[1:]} == {"IN1", "IN2"}
    in1 = next(row for row in values if row[0] == "IN1")
    assert in1[8] == 123.45  # a number in yuan (format 0.00): the column can be summed
    amounts = next(sheet.iter_rows(min_row=2, max_row=2, min_col=9, max_col=9))[0]
    assert amounts.number_format == "0.00"


@pytest.mark.parametrize("kind", ["refunds", "payments", "reconciliation"])
def test_every_kind_exports(role_client, kind):
    client = role_client("财务")
    response = client.get(URL, {"kind": kind, "start": "2026-11-01", "end": "2026-11-30", "fmt": "csv"})
    assert response.status_code == 200
    assert len(b"".join(response.streaming_content).decode("utf-8-sig").splitlines()) == 1  # header, no rows


def test_only_finance_may_export(role_client):
    client = role_client("运营")
    assert (
        client.get(URL, {"kind": "orders", "start": "2026-11-01", "end": "2026-11-30", "fmt": "csv"}).status_code == 403
    )
    assert client.get(URL).status_code == 403


def test_bad_range_is_a_form_error(role_client):
    client = role_client("财务")
    response = client.get(URL, {"kind": "orders", "start": "2026-11-30", "end": "2026-11-01", "fmt": "csv"})
    assert response.status_code == 200 and "日期范围" in response.content.decode()
    page = client.get(URL)  # the form, with the last 7 Shanghai days as defaults
    assert page.status_code == 200 and f'value="{timezone.localdate():%Y-%m-%d}"' in page.content.decode()


def test_orders_export_has_lines_tracking_and_remarks_refunds_the_customers_reason(paid_and_refunded):
    """Orders: lines, carrier and tracking number; refunds: the customer's own reason."""
    client, order_no, reason = paid_and_refunded
    today = timezone.localdate().isoformat()
    response = client.get(URL, {"kind": "orders", "start": today, "end": today, "fmt": "csv"})
    table = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    header, row = table[0], next(r for r in table if r[0] == order_no)
    assert row[header.index("快递公司")] == "顺丰速运" and row[header.index("快递单号")] == "SF1234567890"
    assert row[header.index("商品明细")].endswith("×1") and row[header.index("商家备注")] == "易碎"
    response = client.get(URL, {"kind": "refunds", "start": today, "end": today, "fmt": "csv"})
    table = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert table[0][0] == "退款单号" and table[0][-1] == "顾客退款理由"
    assert [r[-1] for r in table[1:]] == [reason]


def test_product_export_lists_every_sku(paid_and_refunded):
    from apps.catalog.models import Sku

    client = paid_and_refunded[0]
    response = client.get(URL, {"kind": "products", "start": "2026-01-01", "end": "2026-01-01", "fmt": "csv"})
    table = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert table[0][:3] == ["商品编号", "商品", "分类"]
    assert len(table) - 1 == Sku.objects.count() and Sku.objects.count() >= 1
    sku = Sku.objects.order_by("product_id", "id").first()
    assert table[1][table[0].index("价格（元）")] == f"{sku.price_fen / 100:.2f}"


@pytest.fixture
def paid_and_refunded(role_client, make_customer, make_api, make_sku, place_order):
    """(finance client, the shipped order's number, the customer's refund reason): one goods order
    shipped by 顺丰 with a merchant remark, another refunded at the customer's request."""
    from apps.accounts.models import Address
    from apps.orders import shipments
    from apps.payments import refunds

    customer = make_customer(balance_fen=1_000_000)
    api = make_api(customer)
    address = Address.objects.create(
        customer=customer,
        name="张三",
        phone="13800000000",
        province="浙江省",
        city="杭州市",
        district="西湖区",
        detail="文三路100号",
        is_default=True,
    )
    sku = make_sku(price_fen=6000, stock=10)
    nos = []
    for _ in range(2):
        no = place_order(api, items=[(sku, 1)], address=address)["order_no"]
        assert api.post(f"/api/v1/orders/{no}/pay", {"method": "balance"}, format="json").status_code == 200
        nos.append(no)
    shipped = Order.objects.get(order_no=nos[0])
    assert shipments.order_ship(order=shipped, actor="staff:t", carrier_code="shunfeng", tracking_no="SF1234567890")
    Order.objects.filter(pk=shipped.pk).update(merchant_remark="易碎")
    reason = "尺寸不合适，想换一个"
    assert api.post(f"/api/v1/orders/{nos[1]}/refund", {"reason": reason}, format="json").status_code == 202
    from apps.orders.models import AfterSale

    refunds.after_sale_approve(after_sale_id=AfterSale.objects.get(order__order_no=nos[1]).pk, actor="staff:t")
    return role_client("财务"), nos[0], reason
