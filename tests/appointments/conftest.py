"""A teacher with weekly hours and a 60-minute service, for the waitlist and calendar tests."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest
from django.utils import timezone

_order_numbers = itertools.count(1)


@pytest.fixture
def hours_teacher(db):
    """A teacher working 09:00–10:00 every day, one 60-minute service (one start a day),
    no minimum notice: ``.teacher``, ``.product``, ``.day`` (the day after tomorrow),
    ``.start(day)`` (09:00 that day), ``.book(customer, day)`` -> Booking."""
    from apps.appointments import bookings
    from apps.appointments.models import Service, TeacherRules, WeeklyHours
    from apps.catalog.models import Category, Kind, Product, Teacher

    category = Category.objects.create(name="咨询", kind=Kind.CONSULTATION)
    product = Product.objects.create(category=category, name="一小时咨询", kind=Kind.CONSULTATION)
    teacher = Teacher.objects.create(name="周清和", title="讲师", product=product)
    Service.objects.create(teacher=teacher, product=product, duration_minutes=60)
    TeacherRules.objects.create(teacher=teacher, min_notice_minutes=0, step_minutes=30)
    for weekday in range(1, 8):
        WeeklyHours.objects.create(teacher=teacher, weekday=weekday, windows=[["09:00", "10:00"]])

    class HoursTeacher:
        pass

    h = HoursTeacher()
    h.teacher, h.product = teacher, product
    h.day = timezone.localdate() + dt.timedelta(days=2)

    def start(day: dt.date) -> dt.datetime:
        return dt.datetime.combine(day, dt.time(9), tzinfo=timezone.get_current_timezone())

    def book(customer, day: dt.date | None = None):
        begin = start(day or h.day)
        return bookings.booking_create(
            teacher_id=teacher.pk,
            product_id=product.pk,
            start=begin,
            end=begin + dt.timedelta(hours=1),
            order_no=f"SM{next(_order_numbers):020d}",
            customer_id=customer.pk,
        )

    h.start, h.book = start, book
    return h
