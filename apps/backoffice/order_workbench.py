"""The order workbench on the order pages: status tabs with counts on the list, one compact
order page (customer, lines, money, shipment, refunds, log) with the merchant remark, 改价 and
address forms, and the printable packing slip.

Every change calls its service (``apps.orders.workbench``, ``apps.payments.price_change``),
which checks the named permission again; the pages only offer what the user may do."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Exists, OuterRef, Q
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone

from apps.backoffice import estimated_count, roles
from apps.catalog.models import Kind
from apps.orders import workbench
from apps.orders.models import AfterSale, Delivery, Order, OrderStatus, Shipment
from apps.payments import price_change, staff_limits
from apps.payments.models import Refund
from starmall.admin_display import actor_text, address_text, specs_text
from starmall.admin_money import fen_from_yuan, yuan
from starmall.errors import ShopError

ORDER_MONEY_ACTIONS = ["price", "refund", "batch_refund"]  # the "who may" lines of the order page

_OPEN_SALE = AfterSale.objects.filter(order=OuterRef("pk"), status__in=AfterSale.OPEN)

#: tab key -> (label, filter on Order)
TABS: dict[str, tuple[str, Q]] = {
    "unpaid": ("待付款", Q(status=OrderStatus.UNPAID)),
    # pickup orders are collected, never shipped: their own list (自提订单) and to-do
    "to_ship": ("待发货", Q(status=OrderStatus.PAID, kind=Kind.GOODS) & ~Q(delivery=Delivery.PICKUP)),
    "shipped": ("待收货", Q(status=OrderStatus.SHIPPED)),
    "refunding": ("退款中", Q(status=OrderStatus.REFUNDING) | Q(open_sale=True)),
    "completed": ("已完成", Q(status=OrderStatus.COMPLETED)),
}


def with_open_sale(queryset):
    """``queryset`` annotated with ``open_sale`` (a refund request still open) for the tabs."""
    return queryset.annotate(open_sale=Exists(_OPEN_SALE))


class OrderTabFilter(admin.SimpleListFilter):
    """``?tab=unpaid|to_ship|shipped|refunding|completed``: the workbench's tabs (also listed
    in the filter panel)."""

    title = "工作台"
    parameter_name = "tab"

    def lookups(self, request, model_admin):
        return [(key, label) for key, (label, _) in TABS.items()]

    def queryset(self, request, queryset):
        if self.value() in TABS:
            return with_open_sale(queryset).filter(TABS[self.value()][1])
        return queryset


def tab_counts() -> dict[str, int]:
    """Orders per tab: ``{"unpaid": 3, "to_ship": 1, ...}``, one indexed query each; the tabs
    that grow with the shop (``estimated_count``: exact up to 10,000) estimated beyond that,
    unpaid and refunding (work to do, small) always exact."""
    orders = Order.objects.order_by()
    open_sale = AfterSale.objects.filter(status__in=AfterSale.OPEN).exclude(order__status=OrderStatus.REFUNDING)
    exact = ("unpaid", "refunding")
    counts = {key: estimated_count.count(orders.filter(rule)) for key, (_, rule) in TABS.items() if key not in exact}
    counts["unpaid"] = orders.filter(TABS["unpaid"][1]).count()
    counts["refunding"] = (
        orders.filter(status=OrderStatus.REFUNDING).count() + open_sale.order_by().values("order_id").distinct().count()
    )
    return counts


def tabs_context(request) -> list[dict]:
    """The tab row: ``[{"key", "label", "count", "url", "active"}]`` with 全部 first."""
    base = reverse("admin:orders_order_changelist")
    counts = tab_counts()
    current = request.GET.get("tab", "")
    rows = [{"key": "", "label": "全部", "count": None, "url": base, "active": not current}]
    rows += [
        {"key": key, "label": label, "count": counts[key], "url": f"{base}?tab={key}", "active": current == key}
        for key, (label, _) in TABS.items()
    ]
    return rows


def summary_context(request, order: Order) -> dict:
    """What the compact order page shows above the form: customer, lines, money, shipment,
    refunds, log, and which workbench forms this user may use."""
    shipment = Shipment.objects.filter(order=order).first()
    lines = _lines(order)
    refunds = list(Refund.objects.filter(order=order).select_related("after_sale").order_by("pk"))
    sales = list(order.after_sales.order_by("pk"))
    events = _events(order)
    return {
        "order": order,
        "customer": order.customer,
        "address_text": address_text(order.address),
        "address": order.address or {},
        "lines": lines,
        "money": _money(order),
        "shipment": shipment,
        "sales": [
            {
                "no": sale.refund_no,
                "status": sale.get_status_display(),
                "amount": yuan(sale.amount_fen or 0),
                "reason": sale.reason,
            }
            for sale in sales
        ],
        "refunds": [
            {
                "no": r.out_refund_no,
                "amount": yuan(r.refund_fen),
                "status": r.get_status_display(),
                "reason": (r.after_sale.reason if r.after_sale_id else "") or r.get_reason_display(),
            }
            for r in refunds
        ],
        "events": events,
        **_permissions(request.user, order),
        "role_hints": roles.role_hints(request.user, ORDER_MONEY_ACTIONS),
        "urls": {
            **{
                name: reverse(f"admin:orders_order_{name}", args=[order.pk])
                for name in ("remark", "price", "address", "slip", "ship")
            },
            "verify": reverse("admin:stores_pickup_verify"),
        },
    }


def _lines(order: Order) -> list[dict]:
    """The order's lines, in order, with prices in yuan."""
    return [
        {
            "name": line.name,
            "specs": specs_text(line.specs),
            "price": yuan(line.price_fen),
            "quantity": line.quantity,
            "amount": yuan(line.amount_fen),
            "sku_code": getattr(line.sku, "code", ""),
        }
        for line in order.lines.select_related("sku").order_by("pk")
    ]


def _events(order: Order) -> list[dict]:
    """The order's last 12 events, newest first, in local time."""
    return [
        {
            "at": timezone.localtime(e.created_at),
            "status": e.get_to_status_display() or "-",
            "actor": actor_text(e.actor),
            "note": e.note,
        }
        for e in order.events.order_by("-pk")[:12]
    ]


def _money(order: Order) -> dict:
    """The order's amounts in yuan; ``adjusted``: its price was changed (改价);
    ``member_discounted``: a member level's discount (``member_fen``) was taken off."""
    return {
        "goods": yuan(order.goods_fen),
        "freight": yuan(order.freight_fen),
        "coupon": yuan(-order.coupon_fen),  # deductions shown negative; none is "0.00", never "-0.00"
        "points": yuan(-order.points_fen),
        "adjust": yuan(order.adjust_fen),
        "member": yuan(order.member_fen),
        "pay": yuan(order.pay_fen),
        "adjusted": order.adjust_fen != 0,
        "member_discounted": order.member_fen != 0,
    }


def _permissions(user, order: Order) -> dict[str, bool]:
    """Which workbench forms ``user`` may use on ``order`` (its permission and the order's state)."""
    return {
        "can_remark": user.has_perm("orders.edit_merchant_remark"),
        "can_price": staff_limits.may_change_price(user) and order.status == OrderStatus.UNPAID,
        "can_address": (
            user.has_perm("orders.edit_address")
            and order.address is not None
            and order.status in workbench.ADDRESS_EDITABLE
        ),
        "can_ship": (
            user.has_perm("orders.ship_order")
            and order.kind == Kind.GOODS
            and order.status == OrderStatus.PAID
            and order.delivery != Delivery.PICKUP
        ),
        # a pickup order is verified with the code the customer shows, on the 核销 page
        "can_verify": (
            user.has_perm("stores.verify_pickup")
            and order.delivery == Delivery.PICKUP
            and order.status == OrderStatus.PAID
        ),
    }


def _staff_actor(request) -> str:
    return f"staff:{request.user.username}"


def _back(order: Order):
    return redirect(reverse("admin:orders_order_change", args=[order.pk]))


def remark_view(request, object_id: int):
    """POST ``text``: the merchant remark (``orders.edit_merchant_remark``)."""
    order = get_object_or_404(Order, pk=object_id)
    if request.method != "POST":
        return _back(order)
    try:
        workbench.order_merchant_remark_set(
            order_id=order.pk, text=request.POST.get("text", ""), user=request.user, actor=_staff_actor(request)
        )
    except ShopError as exc:
        messages.error(request, f"{order.order_no}：未保存备注：{exc.message}")
    else:
        messages.success(request, f"{order.order_no}：商家备注已保存")
    return _back(order)


def price_view(request, object_id: int):
    """POST ``pay_yuan`` and ``reason``: a confirmation page (old and new amount); POST again with
    ``confirm``: 改价 through the service (its permission and limit: ``staff_limits``)."""
    order = get_object_or_404(Order, pk=object_id)
    if request.method != "POST":
        return _back(order)
    if not staff_limits.may_change_price(request.user):
        raise PermissionDenied(f"需要权限 {staff_limits.PRICE_ANY} 或 {staff_limits.PRICE_LIMITED}")
    reason = request.POST.get("reason", "").strip()
    try:
        pay_fen = fen_from_yuan(request.POST.get("pay_yuan", ""))
        if not request.POST.get("confirm"):
            return _price_confirm(request, order, pay_fen, reason)
        old = order.pay_fen
        order = price_change.order_price_change(
            order_no=order.order_no, pay_fen=pay_fen, reason=reason, user=request.user, actor=_staff_actor(request)
        )
    except ValidationError as exc:
        messages.error(request, f"{order.order_no}：未改价：{'；'.join(exc.messages)}")
    except ShopError as exc:
        messages.error(request, f"{order.order_no}：未改价：{exc.message}")
    else:
        messages.success(request, f"{order.order_no}：已改价 {yuan(old)} 元 → {yuan(order.pay_fen)} 元")
    return _back(order)


def _price_confirm(request, order: Order, pay_fen: int, reason: str):
    """The confirmation page of 改价; the limit is checked first, so a refusal shows before it."""
    adjust = order.adjust_fen + pay_fen - order.pay_fen
    staff_limits.price_change_check(user=request.user, goods_fen=order.goods_fen, adjust_fen=adjust)
    return render(
        request,
        "admin/starmall/money_confirm.html",
        {
            **admin.site.each_context(request),
            "title": f"确认改价 {order.order_no}",
            "intro": "确认后先关闭顾客已发起的微信支付单，顾客再次支付时按新金额下单。",
            "headers": ["订单号", "商品金额（元）", "原实付（元）", "改后实付（元）", "改价调整（元）", "原因"],
            "rows": [[order.order_no, yuan(order.goods_fen), yuan(order.pay_fen), yuan(pay_fen), yuan(adjust), reason]],
            "form_action": reverse("admin:orders_order_price", args=[order.pk]),
            "hidden": [("pay_yuan", yuan(pay_fen)), ("reason", reason)],
            "confirm_label": "确认改价",
            "back_url": reverse("admin:orders_order_change", args=[order.pk]),
        },
    )


def address_view(request, object_id: int):
    """POST the address fields: a new delivery address before shipping (``orders.edit_address``)."""
    order = get_object_or_404(Order, pk=object_id)
    if request.method != "POST":
        return _back(order)
    try:
        workbench.order_address_change(
            order_id=order.pk,
            address=request.POST,
            user=request.user,
            actor=_staff_actor(request),
            reason=request.POST.get("reason", "").strip(),
        )
    except ShopError as exc:
        messages.error(request, f"{order.order_no}：未修改地址：{exc.message}")
    else:
        messages.success(request, f"{order.order_no}：收货地址已修改")
    return _back(order)


def slip_view(request, object_id: int, site):
    """The packing slip: a printable HTML page (lines, address, remarks; no prices)."""
    if not request.user.has_perm("orders.view_order"):
        raise PermissionDenied("需要权限 orders.view_order")
    order = get_object_or_404(Order.objects.select_related("customer"), pk=object_id)
    context = summary_context(request, order)
    return render(
        request,
        "admin/starmall/packing_slip.html",
        {**context, "site_header": site.each_context(request)["site_header"], "printed_at": timezone.localtime()},
    )
