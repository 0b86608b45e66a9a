"""Exports for finance: orders, refunds, payments and reconciliation runs of a Shanghai date
range, as CSV (streamed row by row) or Excel (openpyxl write-only workbook: rows are written
as they are read, never held as cells). Amounts in yuan with two decimals, times in Shanghai.
Every text cell goes through :mod:`starmall.spreadsheet` (a cell starting with ``=``, ``+``,
``-``, ``@``, tab or CR gets a leading ``'``: customers' nicknames and addresses never run as
formulas); amounts stay numbers.

``rows(kind, start, end)`` yields the header then one list per row (``.iterator()``: constant
memory however large the range).
"""

from __future__ import annotations

import csv
import datetime as dt
import tempfile
from collections.abc import Iterator

from django.db.models import Prefetch

from apps.backoffice import exports_groups
from apps.backoffice.selectors import SHANGHAI
from apps.catalog.models import Sku
from apps.orders.models import Order, OrderLine, Shipment
from apps.payments.models import Payment, ReconciliationRun, Refund
from starmall.admin_display import address_text, shanghai, specs_text
from starmall.admin_money import yuan_amount
from starmall.spreadsheet import excel_cell, safe_row

KINDS = {
    "orders": "订单",
    "refunds": "退款",
    "payments": "支付",
    "reconciliation": "对账",
    "products": "商品（全部，不按日期）",
    **exports_groups.KINDS,
}
CHUNK = 2000


def _range(start: dt.date, end: dt.date) -> tuple[dt.datetime, dt.datetime]:
    """Shanghai days ``start``..``end`` (both included) as aware ``[from, to)``."""
    lo = dt.datetime.combine(start, dt.time.min, tzinfo=SHANGHAI)
    return lo, dt.datetime.combine(end, dt.time.min, tzinfo=SHANGHAI) + dt.timedelta(days=1)


def rows(kind: str, start: dt.date, end: dt.date) -> Iterator[list]:
    """Header, then rows of ``kind`` (one of :data:`KINDS`) created (orders, payments, refunds) or
    billed (reconciliation) in the Shanghai days ``start``..``end``. Raises KeyError for another kind."""
    lo, hi = _range(start, end)
    if kind == "orders":
        yield [
            "订单号",
            "顾客",
            "类型",
            "状态",
            "商品金额（元）",
            "运费（元）",
            "优惠券（元）",
            "积分抵扣（元）",
            "实付（元）",
            "支付方式",
            "下单时间",
            "支付时间",
            "发货时间",
            "收货地址",
            "商品明细",
            "快递公司",
            "快递单号",
            "改价调整（元）",
            "顾客备注",
            "商家备注",
        ]
        qs = (
            Order.objects.filter(created_at__gte=lo, created_at__lt=hi)
            .select_related("customer")
            .prefetch_related(Prefetch("lines", queryset=OrderLine.objects.order_by("pk")), "shipment")
            .order_by("id")
        )
        for o in qs.iterator(chunk_size=CHUNK):
            shipment = getattr(o, "shipment", None) if _has_shipment(o) else None
            yield [
                o.order_no,
                str(o.customer),
                o.get_kind_display(),
                o.get_status_display(),
                yuan_amount(o.goods_fen),
                yuan_amount(o.freight_fen),
                yuan_amount(o.coupon_fen),
                yuan_amount(o.points_fen),
                yuan_amount(o.pay_fen),
                o.get_pay_method_display(),
                shanghai(o.created_at),
                shanghai(o.paid_at),
                shanghai(o.shipped_at),
                address_text(o.address),
                _lines_text(o),
                shipment.carrier if shipment else "",
                shipment.tracking_no if shipment else "",
                yuan_amount(o.adjust_fen),
                o.remark,
                o.merchant_remark,
            ]
    elif kind == "refunds":
        yield [
            "退款单号",
            "订单号",
            "类型",
            "状态",
            "退款金额（元）",
            "尝试次数",
            "最近错误",
            "创建时间",
            "退款成功时间",
            "顾客退款理由",
        ]
        qs = (
            Refund.objects.filter(created_at__gte=lo, created_at__lt=hi)
            .select_related("order", "after_sale")
            .order_by("id")
        )
        for r in qs.iterator(chunk_size=CHUNK):
            yield [
                r.out_refund_no,
                r.order.order_no,
                r.get_reason_display(),
                r.get_status_display(),
                yuan_amount(r.refund_fen),
                r.attempts,
                r.last_error,
                shanghai(r.created_at),
                shanghai(r.succeeded_at),
                r.after_sale.reason if r.after_sale_id else "",
            ]
    elif kind == "payments":
        yield [
            "商户订单号",
            "订单号",
            "方式",
            "状态",
            "金额（元）",
            "已退（元）",
            "微信支付单号",
            "创建时间",
            "支付时间",
        ]
        qs = Payment.objects.filter(created_at__gte=lo, created_at__lt=hi).select_related("order").order_by("id")
        for p in qs.iterator(chunk_size=CHUNK):
            yield [
                p.out_trade_no or "",
                p.order.order_no,
                p.get_method_display(),
                p.get_status_display(),
                yuan_amount(p.total_fee),
                yuan_amount(p.refunded_fen),
                p.transaction_id or "",
                shanghai(p.created_at),
                shanghai(p.paid_at),
            ]
    elif kind == "reconciliation":
        yield ["账单日期", "结果", "微信笔数", "本地笔数", "微信金额（元）", "本地金额（元）", "差异数", "错误"]
        qs = ReconciliationRun.objects.filter(bill_date__gte=start, bill_date__lte=end).order_by("bill_date")
        for run in qs.iterator(chunk_size=CHUNK):
            yield [
                run.bill_date.isoformat(),
                run.get_status_display(),
                run.wechat_count,
                run.local_count,
                yuan_amount(run.wechat_fen),
                yuan_amount(run.local_fen),
                len(run.differences or []),
                run.error,
            ]
    elif kind in exports_groups.KINDS:  # 拼团 seats, 砍价 records
        yield from exports_groups.rows(kind, lo, hi)
    elif kind == "products":  # the catalogue as it is now (the dates do not apply): one row per SKU
        yield [
            "商品编号",
            "商品",
            "分类",
            "类型",
            "上架",
            "SKU 编号",
            "规格",
            "商家编码",
            "价格（元）",
            "库存",
            "重量（克）",
            "SKU 启用",
            "销量",
            "评价数",
            "创建时间",
        ]
        skus = Sku.objects.select_related("product", "product__category").order_by("product_id", "id")
        for sku in skus.iterator(chunk_size=CHUNK):
            p = sku.product
            yield [
                p.pk,
                p.name,
                p.category.name,
                p.get_kind_display(),
                "是" if p.is_active else "否",
                sku.pk,
                specs_text(sku.specs),
                sku.code,
                yuan_amount(sku.price_fen),
                sku.stock,
                sku.weight_g,
                "是" if sku.is_active else "否",
                p.sales,
                p.review_count,
                shanghai(p.created_at),
            ]
    else:
        raise KeyError(kind)


def _has_shipment(order: Order) -> bool:
    try:
        order.shipment  # noqa: B018 - prefetched: no query
    except Shipment.DoesNotExist:
        return False
    return True


def _lines_text(order: Order) -> str:
    """ "青瓷盖碗（颜色：天青）×2；茶盘 ×1" from the prefetched lines."""
    return "；".join(
        f"{line.name}{'（' + specs_text(line.specs) + '）' if line.specs else ''} ×{line.quantity}"
        for line in order.lines.all()
    )


class _Echo:
    """A file-like whose write returns the line, for csv.writer inside a generator."""

    def write(self, value: str) -> str:
        return value


def csv_lines(source: Iterator[list]) -> Iterator[str]:
    """CSV text line by line, starting with a UTF-8 BOM so Excel opens the Chinese correctly;
    text cells neutralised (:func:`starmall.spreadsheet.safe_row`)."""
    writer = csv.writer(_Echo())
    yield "\ufeff"
    for row in source:
        yield writer.writerow(safe_row(row))


def xlsx_file(source: Iterator[list], title: str):
    """An Excel file (opened temporary file, at position 0) from a write-only openpyxl workbook;
    each cell made by :func:`starmall.spreadsheet.excel_cell` (text as neutralised strings, yuan
    as numbers)."""
    from openpyxl import Workbook

    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet(title=title)
    for row in source:
        sheet.append([excel_cell(sheet, value) for value in row])
    out = tempfile.TemporaryFile()
    workbook.save(out)
    out.seek(0)
    return out
