"""Reads of delivered consultations: the teacher's schedule, the customer's consultations, the
teacher card (rating from consultation reviews when a review model exists)."""

from __future__ import annotations

import datetime as dt

from django.apps import apps as django_apps
from django.db.models import Avg, Q, QuerySet
from django.utils import timezone

from apps.appointments.models import Booking, Slot
from apps.appointments.selectors import day_bounds
from apps.catalog.models import Kind, Teacher
from apps.chat.models import ChatSession
from apps.orders.models import Order, OrderStatus

UPCOMING_STATUSES = (OrderStatus.UNPAID, OrderStatus.PAID)


def teacher_schedule(*, teacher: Teacher, start: dt.date, end: dt.date) -> list[dict]:
    """The teacher's slots from ``start`` to ``end`` (Shanghai dates, inclusive), each with its
    bookings: ``{"id", "start", "end", "capacity", "booked", "is_open", "bookings": [{"order_no",
    "status", "customer": {"id", "nickname"}, "remark", "chat_session_id"}]}``. Four queries."""
    lo, hi = day_bounds(start, end)
    slots = list(Slot.objects.filter(teacher=teacher, start__gte=lo, start__lt=hi).order_by("start"))
    bookings = list(Booking.objects.filter(slot__in=[s.pk for s in slots]).order_by("created_at"))
    orders = {
        o.order_no: o
        for o in Order.objects.filter(order_no__in=[b.order_no for b in bookings]).select_related("customer")
    }
    sessions = dict(ChatSession.objects.filter(order__in=[o.pk for o in orders.values()]).values_list("order_id", "pk"))
    by_slot: dict[int, list[dict]] = {}
    for booking in bookings:
        order = orders.get(booking.order_no)
        if order is None:
            continue
        by_slot.setdefault(booking.slot_id, []).append(
            {
                "order_no": order.order_no,
                "status": order.status,
                "customer": {"id": order.customer_id, "nickname": order.customer.nickname},
                "remark": order.remark,
                "chat_session_id": sessions.get(order.pk),
            }
        )
    return [
        {
            "id": s.pk,
            "start": timezone.localtime(s.start).isoformat(),
            "end": timezone.localtime(s.end).isoformat(),
            "capacity": s.capacity,
            "booked": s.booked,
            "is_open": s.is_open,
            "bookings": by_slot.get(s.pk, []),
        }
        for s in slots
    ]


def consultation_list(
    *, customer_id: int, status: str | None = None, now: dt.datetime | None = None
) -> QuerySet[Order]:
    """The customer's consultation orders, with slot, teacher and chat session.

    ``upcoming``: unpaid or paid, slot not ended yet (soonest first); ``past``: the rest
    (completed, cancelled, refunded, or the slot has ended; latest first); None: all, newest first.
    """
    now = now or timezone.now()
    qs = Order.objects.filter(customer_id=customer_id, kind=Kind.CONSULTATION, slot__isnull=False).select_related(
        "slot", "slot__teacher", "chat_session"
    )
    upcoming = Q(status__in=UPCOMING_STATUSES, slot__end__gt=now)
    if status == "upcoming":
        return qs.filter(upcoming).order_by("slot__start", "id")
    if status == "past":
        return qs.exclude(upcoming).order_by("-slot__start", "-id")
    return qs.order_by("-id")


def _review_model():
    """The installed product-review model (``rating`` 1..5 and ``product``), or None.

    Looked up by shape rather than imported: chat may not import reviews (a layer beside
    it); without such a model the card's rating is null.
    """
    for model in django_apps.get_models():
        names = {f.name for f in model._meta.get_fields()}
        if "review" in model.__name__.lower() and {"rating", "product"} <= names:
            return model
    return None


def teacher_rating(teacher: Teacher) -> float | None:
    """Average rating (one decimal) of the reviews of the teacher's consultation product, or None."""
    model = _review_model()
    if model is None or teacher.product_id is None:
        return None
    average = model.objects.filter(product_id=teacher.product_id).aggregate(avg=Avg("rating"))["avg"]
    return round(float(average), 1) if average is not None else None
