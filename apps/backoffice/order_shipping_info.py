"""The shipping information (微信发货信息管理) in the order pages: the list's column and filter,
the order page's state with its "重新上传发货信息" button, and the tracking-number correction.

Each change calls its service — ``apps.payments.shipping_info.shipping_info_reupload`` (checks
``payments.upload_shipping_info`` again) and ``apps.orders.shipments.shipment_correct`` (the
page checks ``orders.ship_order``, as shipping does) — so the pages only offer what the user
may do and the rule holds however the service is reached."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone

from apps.catalog.models import Kind
from apps.logistics import carriers
from apps.orders import shipments
from apps.orders.models import Order, OrderStatus
from apps.payments import shipping_info
from apps.payments.models import ShippingInfo
from starmall.admin import Outcome
from starmall.errors import ShopError

SHIP_PERMISSION = "orders.ship_order"


def state_text(info: ShippingInfo | None) -> str:
    """``"已上传"``, ``"未上传"``, ``"上传失败：<errcode> <error>"``; "-" without a row (not paid
    by WeChat, or nothing delivered yet)."""
    if info is None:
        return "-"
    if info.state == ShippingInfo.State.UPLOADED:
        return info.get_state_display()
    if info.last_error:
        code = f"{info.last_errcode} " if info.last_errcode not in (None, 0) else ""
        return f"{info.get_state_display()}：{code}{info.last_error[:80]}"
    return info.get_state_display()


class ShippingInfoFilter(admin.SimpleListFilter):
    """The list filtered by the shipping information's state (未上传 / 已上传 / 上传失败)."""

    title = "发货信息"
    parameter_name = "shipping_info"

    def lookups(self, request, model_admin):
        return list(ShippingInfo.State.choices) + [("none", "无需上传")]

    def queryset(self, request, queryset):
        value = self.value()
        if value == "none":
            return queryset.filter(shipping_info__isnull=True)
        if value in ShippingInfo.State.values:
            return queryset.filter(shipping_info__state=value)
        return queryset


def summary(user, order: Order) -> dict:
    """The order page's part: ``shipping_info`` (state, version, when, what was sent),
    ``can_reupload``, ``can_correct``, ``carriers`` and the two form URLs."""
    info = ShippingInfo.objects.filter(order=order).first()
    return {
        "shipping_info": None
        if info is None
        else {
            "state": info.state,
            "text": state_text(info),
            "type": info.get_logistics_type_display(),
            "version": info.version,
            "uploaded_at": timezone.localtime(info.uploaded_at) if info.uploaded_at else None,
        },
        "can_reupload": info is not None and user.has_perm(shipping_info.PERMISSION),
        "can_correct": (
            user.has_perm(SHIP_PERMISSION) and order.kind == Kind.GOODS and order.status == OrderStatus.SHIPPED
        ),
        "carriers": list(carriers.CARRIERS.items()),
        "shipping_urls": {
            "reupload": reverse("admin:orders_order_shipping_info", args=[order.pk]),
            "correct": reverse("admin:orders_order_shipment", args=[order.pk]),
        },
    }


def reupload(request, order: Order) -> Outcome:
    """THE re-upload for one order, as an action's outcome."""
    try:
        info = shipping_info.shipping_info_reupload(
            order_id=order.pk, user=request.user, actor=f"staff:{request.user.username}"
        )
    except ShopError as exc:
        return Outcome(order.order_no, messages.WARNING, f"未上传：{exc.message}")
    return Outcome(order.order_no, messages.SUCCESS, f"发货信息将重新上传（第 {info.version} 版）")


def _back(order: Order):
    return redirect(reverse("admin:orders_order_change", args=[order.pk]))


def reupload_view(request, object_id: int):
    """POST: upload the order's shipping information again (``payments.upload_shipping_info``)."""
    order = get_object_or_404(Order, pk=object_id)
    if request.method != "POST":
        return _back(order)
    if not request.user.has_perm(shipping_info.PERMISSION):
        raise PermissionDenied(f"需要权限 {shipping_info.PERMISSION}")
    outcome = reupload(request, order)
    messages.add_message(request, outcome.level, f"{order.order_no}：{outcome.text}")
    return _back(order)


def shipment_view(request, object_id: int):
    """POST ``carrier`` and ``tracking_no``: correct a shipped order's tracking number
    (``orders.ship_order``); the shipping information is uploaded again."""
    order = get_object_or_404(Order, pk=object_id)
    if request.method != "POST":
        return _back(order)
    if not request.user.has_perm(SHIP_PERMISSION):
        raise PermissionDenied(f"需要权限 {SHIP_PERMISSION}")
    carrier, tracking_no = request.POST.get("carrier", ""), request.POST.get("tracking_no", "")
    try:
        changed = shipments.shipment_correct(
            order=order, actor=f"staff:{request.user.username}", carrier_code=carrier, tracking_no=tracking_no
        )
    except ShopError as exc:
        messages.error(request, f"{order.order_no}：未修改快递单号：{exc.message}")
        return _back(order)
    if changed:
        messages.success(
            request, f"{order.order_no}：快递单号已改为 {carriers.carrier_name(carrier)} {tracking_no.strip()}"
        )
    else:
        messages.warning(request, f"{order.order_no}：未修改：订单不是「已发货」，或快递单号没有变化")
    return _back(order)
