"""Buy again: a fresh confirm for the lines of an earlier order (API.md Additions)."""

from __future__ import annotations

from apps.accounts.models import Customer
from apps.catalog.models import Kind, Sku
from apps.orders.models import OrderLine
from starmall.errors import InvalidState


def order_reorder(*, order_no: str, customer: Customer) -> dict:
    """Confirm (``apps.orders.confirm.order_confirm``) the same SKUs and quantities again, at today's prices,
    to the customer's default address; return confirm's answer plus ``"missing"``: the lines
    left out, ``[{"sku_id", "name", "specs", "quantity", "reason": "off_sale" | "sold_out"}]``.
    A quantity above today's stock is lowered to it. Raises NotFound (not the customer's
    order), InvalidState (a consultation — book a new slot instead —, or nothing left to buy),
    and confirm's errors (caps, no address...).
    """
    from apps.orders.confirm import order_confirm
    from apps.orders.services import order_get

    order = order_get(order_no=order_no, customer_id=customer.pk)
    if order.kind != Kind.GOODS:
        raise InvalidState("咨询订单请重新选择时段预约。", kind=order.kind)
    lines = list(OrderLine.objects.filter(order=order).order_by("id"))
    skus = {s.pk: s for s in Sku.objects.select_related("product").filter(pk__in=[line.sku_id for line in lines])}
    items, missing = [], []
    for line in lines:
        sku = skus.get(line.sku_id)
        reason = None
        if sku is None or not sku.is_active or not sku.product.is_active:
            reason = "off_sale"
        elif sku.stock <= 0:
            reason = "sold_out"
        if reason:
            missing.append(
                {
                    "sku_id": line.sku_id,
                    "name": line.name,
                    "specs": line.specs,
                    "quantity": line.quantity,
                    "reason": reason,
                }
            )
        else:
            items.append({"sku_id": line.sku_id, "quantity": min(line.quantity, sku.stock)})
    if not items:
        raise InvalidState("订单中的商品均已下架或售罄。", missing=missing)
    draft = order_confirm(customer=customer, items=items)
    return {**draft, "missing": missing}
