"""One function per audit event of an order (Saleor ``order/events.py``): the OrderEvent rows.

``OrderEvent`` is append-only; nothing else creates its rows, so every kind of entry is written
one way and found by one name.
"""

from __future__ import annotations

from apps.orders.models import Order, OrderEvent, OrderStatus


def order_created_event(*, order: Order, actor: str) -> OrderEvent:
    """The order was created (unpaid; stock, slot, coupon and points held)."""
    return OrderEvent.objects.create(order=order, to_status=OrderStatus.UNPAID, actor=actor, note="下单")


def order_status_changed_event(
    *, order: Order, from_status: str, to_status: str, actor: str, note: str = ""
) -> OrderEvent:
    """A conditional status UPDATE won (``from_status -> to_status``)."""
    return OrderEvent.objects.create(
        order=order, from_status=from_status, to_status=to_status, actor=actor, note=note[:255]
    )


def order_late_payment_event(*, order: Order, actor: str, transaction_id: str, out_refund_no: str | None) -> OrderEvent:
    """Money arrived for an order no longer unpaid; the refund that returns it (None: already queued)."""
    return OrderEvent.objects.create(
        order=order,
        from_status=order.status,
        to_status=order.status,
        actor=actor,
        note=f"订单{order.get_status_display()}后收到微信支付 {transaction_id}；退款单 {out_refund_no or '已在处理'}"[
            :255
        ],
    )


def order_rescheduled_event(*, order: Order, from_slot, to_slot, actor: str) -> OrderEvent:
    """The consultation was moved from one slot to another (status unchanged; times in Shanghai)."""
    from django.utils import timezone

    def when(slot) -> str:
        return f"#{slot.pk} {timezone.localtime(slot.start):%Y-%m-%d %H:%M}"

    return OrderEvent.objects.create(
        order=order,
        from_status=order.status,
        to_status=order.status,
        actor=actor,
        note=f"改约 {when(from_slot)} → {when(to_slot)}"[:255],
    )


def order_shipment_corrected_event(*, order: Order, actor: str, before: str, after: str) -> OrderEvent:
    """Staff corrected the carrier / tracking number of a shipped order (status unchanged)."""
    return OrderEvent.objects.create(
        order=order,
        from_status=order.status,
        to_status=order.status,
        actor=actor,
        note=f"修改快递单号：{before} → {after}"[:255],
    )
