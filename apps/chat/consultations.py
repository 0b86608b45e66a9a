"""Reads of delivered consultations: the teacher's schedule, the customer's consultations, the
teacher card (rating from consultation reviews when a review model exists)."""

from __future__ import annotations

import datetime as dt

from django.apps import apps as django_apps
from django.db.models import Avg, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from apps.appointments import selectors as slot_selectors
from apps.appointments.models import Booking
from apps.appointments.selectors import day_bounds
from apps.catalog.models import Kind, Teacher
from apps.chat.models import ChatSession
from apps.orders.models import Order, OrderStatus

UPCOMING_STATUSES = (OrderStatus.UNPAID, OrderStatus.PAID)


def teacher_schedule(*, teacher: Teacher, start: dt.date, end: dt.date) -> list[dict]:
    """The teacher's time from ``start`` to ``end`` (Shanghai dates, inclusive), by start: each
    live booking (``capacity`` 1, ``booked`` 1) with its order, and each start still listed by
    availability of the first service (``booked`` 0, no bookings): ``{"id", "start", "end",
    "capacity", "booked", "is_open", "bookings": [{"order_no", "status", "customer": {"id",
    "nickname"}, "remark", "chat_session_id"}]}``. ``id`` is the legacy slot id (API.md "Booking")."""
    lo, hi = day_bounds(start, end)
    booked = list(Booking.objects.filter(live=True, teacher=teacher, start__gte=lo, start__lt=hi).order_by("start"))
    orders = {
        o.order_no: o
        for o in Order.objects.filter(order_no__in=[b.order_no for b in booked]).select_related("customer")
    }
    sessions = dict(ChatSession.objects.filter(order__in=[o.pk for o in orders.values()]).values_list("order_id", "pk"))
    rows = []
    for booking in booked:
        order = orders.get(booking.order_no)
        entry = {
            "order_no": booking.order_no,
            "status": order.status if order else "",
            "customer": {"id": booking.customer_id, "nickname": order.customer.nickname if order else ""},
            "remark": order.remark if order else "",
            "chat_session_id": sessions.get(order.pk) if order else None,
        }
        rows.append((booking.start, booking.slot_id, booking.end, [entry]))
    taken = {b.start for b in booked}
    free = slot_selectors.slot_list(teacher_id=teacher.pk, start=start, end=end) if teacher.is_active else []
    rows += [(s.start, s.pk, s.end, []) for s in free if s.start not in taken]
    rows.sort(key=lambda row: row[0])
    return [
        {
            "id": slot_id,
            "start": timezone.localtime(begin).isoformat(),
            "end": timezone.localtime(finish).isoformat(),
            "capacity": 1,
            "booked": len(entries),
            "is_open": True,
            "bookings": entries,
        }
        for begin, slot_id, finish, entries in rows
    ]


def consultation_list(
    *, customer_id: int, status: str | None = None, now: dt.datetime | None = None
) -> QuerySet[Order]:
    """The customer's consultation orders that booked a teacher's time, with chat session and
    the booking's ``booking_start`` and ``booking_end`` annotated.

    ``upcoming``: unpaid or paid, booking not ended yet (soonest first); ``past``: the rest
    (completed, cancelled, refunded, or the booking has ended; latest first); None: all, newest first.
    """
    now = now or timezone.now()
    booking = Booking.objects.filter(order_no=OuterRef("order_no"))
    qs = (
        Order.objects.filter(customer_id=customer_id, kind=Kind.CONSULTATION)
        .annotate(
            booking_start=Subquery(booking.values("start")[:1]),
            booking_end=Subquery(booking.values("end")[:1]),
        )
        .filter(booking_start__isnull=False)
        .select_related("chat_session")
    )
    upcoming = Q(status__in=UPCOMING_STATUSES, booking_end__gt=now)
    if status == "upcoming":
        return qs.filter(upcoming).order_by("booking_start", "id")
    if status == "past":
        return qs.exclude(upcoming).order_by("-booking_start", "-id")
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
