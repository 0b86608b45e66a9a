"""After-sales, "return first": a shipped order's refund waits for the goods to come back.

``requested`` --staff: approve return--> ``approved_return`` --customer: tracking number-->
``returning`` --staff: goods received--> ``approved`` (the refund of ``refunds.after_sale_approve``
runs: reserve, Refund row, worker) --> ``refunded``. Staff may reject at any step before the
goods are received, with a reason the customer sees. Each step is a conditional UPDATE on the
request's status: a double click or a replay changes nothing.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from apps.orders.models import AfterSale, Order, OrderStatus
from apps.orders.shipments import TRACKING_NO
from apps.payments import refunds, staff_limits
from apps.payments.models import Refund
from starmall.errors import InvalidInput, InvalidState, NotFound


def after_sale_approve_return(*, after_sale_id: int, actor: str, note: str = "", user=None) -> bool:
    """Staff agree to refund once the goods are back: ``requested -> approved_return``.

    ``user`` (the back office passes it): StaffForbidden unless they may approve a refund of
    the request's amount (``staff_limits.refund_approval_check``), as for a direct approval.

    Only for an order that was shipped (``shipped`` or ``completed``): InvalidState otherwise
    (a paid, unshipped order is refunded at once with ``after_sale_approve``). False when the
    request was not ``requested`` any more. ``note`` (e.g. the return address) is shown to the
    customer."""
    with transaction.atomic():
        request = AfterSale.objects.filter(pk=after_sale_id).select_related("order").first()
        if request is None:
            return False
        if user is not None:
            staff_limits.refund_approval_check(user=user, amount_fen=request.amount_fen)
        order = Order.objects.select_for_update().get(pk=request.order_id)
        if order.status not in (OrderStatus.SHIPPED, OrderStatus.COMPLETED):
            raise InvalidState("只有已发货的订单需要先退货。", status=order.status)
        return (
            AfterSale.objects.filter(pk=after_sale_id, status=AfterSale.Status.REQUESTED).update(
                status=AfterSale.Status.APPROVED_RETURN,
                decided_by=actor,
                decided_at=timezone.now(),
                decision_note=note[:200],
            )
            == 1
        )


def after_sale_return_sent(*, refund_no: str, customer_id: int, carrier: str, tracking_no: str) -> AfterSale:
    """The customer sent the goods back: ``approved_return -> returning`` with the parcel's
    carrier (free text, e.g. 顺丰) and tracking number. The same parcel again returns the
    request unchanged. Raises NotFound (not the customer's), InvalidInput (bad number),
    InvalidState (the request is not waiting for a return)."""
    request = AfterSale.objects.filter(refund_no=refund_no, order__customer_id=customer_id).first()
    if request is None:
        raise NotFound("售后申请不存在。", refund_no=refund_no)
    carrier, tracking_no = (carrier or "").strip()[:32], (tracking_no or "").strip()
    if not carrier:
        raise InvalidInput("请填写快递公司。", carrier=["请填写快递公司"])
    if not TRACKING_NO.fullmatch(tracking_no):
        raise InvalidInput("快递单号不正确。", tracking_no=["6 到 40 位字母、数字或短横线"])
    if (
        AfterSale.objects.filter(pk=request.pk, status=AfterSale.Status.APPROVED_RETURN).update(
            status=AfterSale.Status.RETURNING,
            return_carrier=carrier,
            return_tracking_no=tracking_no,
            return_sent_at=timezone.now(),
        )
        != 1
    ):
        request.refresh_from_db()
        if request.status == AfterSale.Status.RETURNING and request.return_tracking_no == tracking_no:
            return request  # the same parcel again (retry)
        raise InvalidState("该售后申请当前不需要寄回商品。", status=request.status)
    request.refresh_from_db()
    return request


def after_sale_return_received(*, after_sale_id: int, actor: str) -> Refund | None:
    """Staff received the returned goods: ``returning -> approved`` and the refund runs
    (``refunds.after_sale_approve(returned=True)``: a full refund restocks the units). None
    when the request was not ``returning``; InvalidState when the amount no longer fits."""
    return refunds.after_sale_approve(after_sale_id=after_sale_id, actor=actor, returned=True)
