"""The cancellation policy of a paid consultation (API.md "Booking"), at payments' level.

A refund asked at least ``CANCEL_FULL_REFUND_HOURS`` before the booking's start is for all of
``pay_fen``; later, before the start, for ``LATE_CANCEL_REFUND_PERCENT`` % of it (down to the
fen; the rest is kept); at or after the start it is refused (InvalidState). The policy decides,
whatever amount the customer asked. ``refunds.refund_request`` asks :func:`policy_amount`,
approves at once as the shop (no staff limit) and calls :func:`booking_cancelled` in the
approving transaction: the order becomes ``refunding`` and the booking is released now.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.utils import timezone

from apps.appointments import slots
from apps.appointments.models import Booking
from apps.catalog.models import Kind
from apps.orders import services as orders
from apps.orders.models import Order, OrderStatus
from apps.payments.models import Refund
from starmall.errors import InvalidState

POLICY_ACTOR = "system:cancel-policy"


def policy_amount(*, order: Order, now: dt.datetime | None = None) -> int | None:
    """The fen the policy refunds for a paid consultation with a booking; None when the
    order is not one (the ordinary rules apply). InvalidState when it is no longer ``paid``
    or its booking has started."""
    if order.kind != Kind.CONSULTATION:
        return None
    start = Booking.objects.filter(order_no=order.order_no).values_list("start", flat=True).first()
    if start is None:
        return None
    now = now or timezone.now()
    if order.status != OrderStatus.PAID:
        raise InvalidState("该预约已不能取消退款。", status=order.status)
    if now >= start:
        raise InvalidState("预约已开始，不能取消退款。", start=timezone.localtime(start).isoformat())
    if start - now >= dt.timedelta(hours=settings.CANCEL_FULL_REFUND_HOURS):
        return order.pay_fen
    return order.pay_fen * settings.LATE_CANCEL_REFUND_PERCENT // 100


def booking_cancelled(*, order: Order, refund: Refund) -> None:
    """In the approving transaction: the order ``paid -> refunding`` (a no-op when the full
    refund already moved it), its booking released now, and the refund restocks (the
    consultation was not held)."""
    orders.order_mark_refunding(order=order, actor=POLICY_ACTOR)
    slots.slot_release(order_no=order.order_no)  # now: its start is offered again, to the waitlist too
    Refund.objects.filter(pk=refund.pk).update(restock=True)
