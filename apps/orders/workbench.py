"""The order workbench's own changes (back office): the merchant remark and the delivery address
before shipping. Each is a conditional UPDATE logged as an :class:`OrderEvent` with who did it.
Permissions are checked by the caller's page AND here (``user.has_perm``): the same rule however
the service is reached. The price change (改价) asks WeChat first, so it lives in payments
(``apps.payments.price_change``)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import transaction

from apps.orders.models import Order, OrderEvent, OrderStatus
from starmall.admin_display import address_text
from starmall.errors import InvalidInput, InvalidState

#: Statuses in which the delivery address may still change (nothing handed to a carrier yet)
ADDRESS_EDITABLE = (OrderStatus.UNPAID, OrderStatus.PAID)
ADDRESS_FIELDS = ("name", "phone", "province", "city", "district", "detail")


def _require(user, perm: str) -> None:
    if user is None or not user.has_perm(perm):
        raise PermissionDenied(f"需要权限 {perm}")


def order_merchant_remark_set(*, order_id: int, text: str, user, actor: str) -> Order:
    """Set the staff-only remark (at most 500 characters; "" clears it) and log it.

    ``user`` must hold ``orders.edit_merchant_remark`` (PermissionDenied); ``actor`` is
    "staff:<username>". Raises ``Order.DoesNotExist``."""
    _require(user, "orders.edit_merchant_remark")
    text = (text or "").strip()
    if len(text) > 500:
        raise InvalidInput("商家备注最多 500 个字。")
    with transaction.atomic():
        order = Order.objects.select_for_update().get(pk=order_id)
        if order.merchant_remark == text:
            return order
        Order.objects.filter(pk=order.pk).update(merchant_remark=text)
        OrderEvent.objects.create(
            order=order,
            from_status=order.status,
            to_status=order.status,
            actor=actor,
            note=f"商家备注：{text or '（清空）'}"[:255],
        )
        order.merchant_remark = text
    return order


def order_address_change(*, order_id: int, address: dict, user, actor: str, reason: str = "") -> Order:
    """Replace the delivery address of a goods order not yet shipped (待支付 / 已支付), logged
    with the old and new address.

    ``address``: name, phone, province, city, district, detail (all text; name, phone and
    detail required). The freight already charged is not recomputed. ``user`` needs
    ``orders.edit_address`` (PermissionDenied). Raises InvalidInput (missing fields),
    InvalidState (shipped, finished, refunded or cancelled meanwhile: the UPDATE's row count
    decides), ``Order.DoesNotExist``."""
    _require(user, "orders.edit_address")
    new = {key: str(address.get(key) or "").strip() for key in ADDRESS_FIELDS}
    missing = [label for key, label in (("name", "收货人"), ("phone", "电话"), ("detail", "详细地址")) if not new[key]]
    if missing:
        raise InvalidInput(f"请填写{'、'.join(missing)}。")
    if len(new["phone"]) > 20 or any(len(v) > 200 for v in new.values()):
        raise InvalidInput("地址内容过长。")
    with transaction.atomic():
        order = Order.objects.select_for_update().get(pk=order_id)
        if order.address is None:
            raise InvalidState("该订单没有收货地址（咨询订单）。", status=order.status)
        old = order.address
        if Order.objects.filter(pk=order.pk, status__in=ADDRESS_EDITABLE).update(address=new) != 1:
            raise InvalidState(
                f"订单状态为「{order.get_status_display()}」，已发货或已结束的订单不能改地址。", status=order.status
            )
        OrderEvent.objects.create(
            order=order,
            from_status=order.status,
            to_status=order.status,
            actor=actor,
            note=f"修改收货地址：{address_text(old)} → {address_text(new)}{'（' + reason + '）' if reason else ''}"[
                :255
            ],
        )
        order.address = new
    return order
