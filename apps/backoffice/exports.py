"""Exports for finance: orders, refunds, payments and reconciliation runs of a Shanghai date
range, as CSV or Excel, both streamed row by row (Excel: :mod:`starmall.xlsx_stream`, the zip
built on the fly): the first bytes leave before the last row is read, memory stays flat.

Cells are typed (:mod:`starmall.spreadsheet`; the list: docs/BACKOFFICE.md "Exports"): amounts are
yuan as ``Decimal``, counts and ids integers, times aware datetimes in Beijing time, nothing is
``None`` (an empty cell); a text cell that a spreadsheet would run as a formula gets a leading ``'``.
``rows(kind, start, end)`` yields the header then one list per row (``.iterator()``: constant
memory), read off the replica when one is configured (:mod:`starmall.db_replica`).
"""

from __future__ import annotations

import csv
import datetime as dt
from collections.abc import Iterator
from operator import attrgetter, methodcaller

from django.db.models import Prefetch

from apps.backoffice import exports_groups, exports_members
from apps.backoffice.export_table import Export, yes
from apps.backoffice.selectors import SHANGHAI
from apps.catalog.models import Sku
from apps.orders.models import Order, OrderLine, Shipment
from apps.payments.models import Payment, ReconciliationRun, Refund
from starmall.admin_display import address_text, specs_text
from starmall.admin_money import yuan_amount
from starmall.db_replica import reporting_alias
from starmall.spreadsheet import safe_row

KINDS = {
    "orders": "订单",
    "refunds": "退款",
    "payments": "支付",
    "reconciliation": "对账",
    "products": "商品（全部，不按日期）",
    **exports_groups.KINDS,
    **exports_members.KINDS,
}
CHUNK = 2000


def _range(start: dt.date, end: dt.date) -> tuple[dt.datetime, dt.datetime]:
    """Shanghai days ``start``..``end`` (both included) as aware ``[from, to)``."""
    lo = dt.datetime.combine(start, dt.time.min, tzinfo=SHANGHAI)
    return lo, dt.datetime.combine(end, dt.time.min, tzinfo=SHANGHAI) + dt.timedelta(days=1)


def rows(kind: str, start: dt.date, end: dt.date) -> Iterator[list]:
    """Header, then rows of ``kind`` (one of :data:`KINDS`) created (orders, payments, refunds) or
    billed (reconciliation) in the Shanghai days ``start``..``end``; products: the catalogue as it
    is now, one row per SKU (the dates do not apply). Raises KeyError for another kind."""
    lo, hi = _range(start, end)
    export = EXPORTS[kind]
    yield [header for header, _ in export.columns]
    for obj in export.objects(lo, hi, start, end).using(reporting_alias()).iterator(chunk_size=CHUNK):
        yield [value(obj) for _, value in export.columns]


def _shipment(order: Order) -> Shipment | None:
    return order.shipment if _has_shipment(order) else None


EXPORTS = {
    "orders": Export(
        columns=(
            ("订单号", attrgetter("order_no")),
            ("顾客", lambda o: str(o.customer)),
            ("类型", methodcaller("get_kind_display")),
            ("状态", methodcaller("get_status_display")),
            ("商品金额（元）", lambda o: yuan_amount(o.goods_fen)),
            ("运费（元）", lambda o: yuan_amount(o.freight_fen)),
            ("优惠券（元）", lambda o: yuan_amount(o.coupon_fen)),
            ("积分抵扣（元）", lambda o: yuan_amount(o.points_fen)),
            ("实付（元）", lambda o: yuan_amount(o.pay_fen)),
            ("支付方式", methodcaller("get_pay_method_display")),
            ("下单时间（北京时间）", attrgetter("created_at")),
            ("支付时间（北京时间）", attrgetter("paid_at")),
            ("发货时间（北京时间）", attrgetter("shipped_at")),
            ("收货地址", lambda o: address_text(o.address) if o.address else None),
            ("商品明细", lambda o: _lines_text(o)),
            ("快递公司", lambda o: shipment.carrier if (shipment := _shipment(o)) else ""),
            ("快递单号", lambda o: shipment.tracking_no if (shipment := _shipment(o)) else ""),
            ("改价调整（元）", lambda o: yuan_amount(o.adjust_fen)),
            ("会员折扣（元）", lambda o: yuan_amount(o.member_fen)),
            ("顾客备注", attrgetter("remark")),
            ("商家备注", attrgetter("merchant_remark")),
            *exports_members.ORDER_COLUMNS,  # the customer's level and SVIP
        ),
        objects=lambda lo, hi, start, end: (
            Order.objects.filter(created_at__gte=lo, created_at__lt=hi)
            .select_related("customer")
            .annotate(**exports_members.member_annotations())
            .prefetch_related(Prefetch("lines", queryset=OrderLine.objects.order_by("pk")), "shipment")
            .order_by("id")
        ),
    ),
    "refunds": Export(
        columns=(
            ("退款单号", attrgetter("out_refund_no")),
            ("订单号", lambda r: r.order.order_no if r.order_id else r.card_purchase.purchase_no),  # a card: its number
            ("类型", methodcaller("get_reason_display")),
            ("状态", methodcaller("get_status_display")),
            ("退款金额（元）", lambda r: yuan_amount(r.refund_fen)),
            ("尝试次数", attrgetter("attempts")),
            ("最近错误", attrgetter("last_error")),
            ("创建时间（北京时间）", attrgetter("created_at")),
            ("退款成功时间（北京时间）", attrgetter("succeeded_at")),
            ("顾客退款理由", lambda r: r.after_sale.reason if r.after_sale_id else ""),
        ),
        objects=lambda lo, hi, start, end: (
            Refund.objects.filter(created_at__gte=lo, created_at__lt=hi)
            .select_related("order", "after_sale", "card_purchase")
            .order_by("id")
        ),
    ),
    "payments": Export(
        columns=(
            ("商户订单号", lambda p: p.out_trade_no or ""),
            ("订单号", attrgetter("order.order_no")),
            ("方式", methodcaller("get_method_display")),
            ("状态", methodcaller("get_status_display")),
            ("金额（元）", lambda p: yuan_amount(p.total_fee)),
            ("已退（元）", lambda p: yuan_amount(p.refunded_fen)),
            ("微信支付单号", lambda p: p.transaction_id or ""),
            ("创建时间（北京时间）", attrgetter("created_at")),
            ("支付时间（北京时间）", attrgetter("paid_at")),
        ),
        objects=lambda lo, hi, start, end: (
            Payment.objects.filter(created_at__gte=lo, created_at__lt=hi).select_related("order").order_by("id")
        ),
    ),
    "reconciliation": Export(
        columns=(
            ("账单日期", attrgetter("bill_date")),
            ("结果", methodcaller("get_status_display")),
            ("微信笔数", attrgetter("wechat_count")),
            ("本地笔数", attrgetter("local_count")),
            ("微信金额（元）", lambda run: yuan_amount(run.wechat_fen)),
            ("本地金额（元）", lambda run: yuan_amount(run.local_fen)),
            ("差异数", lambda run: len(run.differences or [])),
            ("错误", attrgetter("error")),
        ),
        objects=lambda lo, hi, start, end: ReconciliationRun.objects.filter(
            bill_date__gte=start, bill_date__lte=end
        ).order_by("bill_date"),
    ),
    "products": Export(
        columns=(
            ("商品编号", attrgetter("product.pk")),
            ("商品", attrgetter("product.name")),
            ("分类", attrgetter("product.category.name")),
            ("类型", lambda sku: sku.product.get_kind_display()),
            ("上架", lambda sku: yes(sku.product.is_active)),
            ("SKU 编号", attrgetter("pk")),
            ("规格", lambda sku: specs_text(sku.specs) if sku.specs else None),
            ("商家编码", attrgetter("code")),
            ("价格（元）", lambda sku: yuan_amount(sku.price_fen)),
            ("库存", attrgetter("stock")),
            ("重量（克）", attrgetter("weight_g")),
            ("SKU 启用", lambda sku: yes(sku.is_active)),
            ("销量", attrgetter("product.sales")),
            ("评价数", attrgetter("product.review_count")),
            ("创建时间（北京时间）", attrgetter("product.created_at")),
        ),
        objects=lambda lo, hi, start, end: Sku.objects.select_related("product", "product__category").order_by(
            "product_id", "id"
        ),
    ),
    **exports_groups.EXPORTS,  # 拼团 seats, 砍价 records
    **exports_members.EXPORTS,  # paid member cards
}


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
    text cells neutralised, nothing empty, times in Beijing (:func:`starmall.spreadsheet.safe_row`)."""
    writer = csv.writer(_Echo())
    yield "\ufeff"
    for row in source:
        yield writer.writerow(safe_row(row))
