"""The dashboard's booking occupancy: booked minutes of live bookings over the open minutes of
the teacher's hours (weekly windows, date overrides), per teacher (docs/BACKOFFICE.md)."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.appointments.models import Booking, DateOverride
from apps.backoffice import selectors

pytestmark = pytest.mark.django_db


def _booking(h, customer, no, start, minutes, **extra):
    return Booking.objects.create(
        teacher=h.teacher,
        product=h.long,
        start=start,
        end=start + dt.timedelta(minutes=minutes),
        blocked_until=start + dt.timedelta(minutes=minutes + 15),
        order_no=no,
        customer=customer,
        **extra,
    )


def test_occupancy_is_booked_minutes_over_the_open_minutes_of_the_hours(hours_teacher, make_customer, boss):
    h = hours_teacher
    customer = make_customer()
    week = (h.at(0), h.at(0, day=h.monday + dt.timedelta(days=7)))  # Monday 00:00 .. next Monday 00:00
    _booking(h, customer, "B1", h.at(9), 60)  # paid: held for good
    _booking(h, customer, "B2", h.at(14, day=h.monday + dt.timedelta(days=1)), 30, hold_until=h.at(23))  # unpaid
    _booking(h, customer, "B3", h.at(16), 60, live=False)  # released: not counted
    _booking(h, customer, "B4", h.at(10, 30), 60, hold_until=timezone.now() - dt.timedelta(minutes=1))  # expired hold
    # Mon-Fri 09-12 + 14-18 (420 min), Sat 10-16 (360), Sun off: 5 * 420 + 360
    [row] = selectors.occupancy(*week)
    assert row == {
        "teacher_id": h.teacher.pk,
        "teacher_name": h.teacher.name,
        "bookings": 2,
        "booked_minutes": 90,
        "open_minutes": 2460,
        "rate": 3.7,
    }
    # Friday off and Saturday 10-11 only: 4 * 420 + 60 open minutes
    DateOverride.objects.create(teacher=h.teacher, date=h.monday + dt.timedelta(days=4), off=True)
    DateOverride.objects.create(teacher=h.teacher, date=h.monday + dt.timedelta(days=5), windows=[["10:00", "11:00"]])
    [row] = selectors.occupancy(*week)
    assert (row["open_minutes"], row["booked_minutes"], row["rate"]) == (1740, 90, 5.2)
    # a day without open hours gives 0.0, never a division by zero
    sunday = h.monday + dt.timedelta(days=6)
    [row] = selectors.occupancy(h.at(0, day=sunday), h.at(0, day=sunday + dt.timedelta(days=1)))
    assert (row["open_minutes"], row["rate"]) == (0, 0.0)


def test_the_dashboard_shows_the_next_seven_days_occupancy(hours_teacher, make_customer, boss):
    h = hours_teacher
    today = timezone.localdate()
    start = dt.datetime.combine(today + dt.timedelta(days=1), dt.time(9), tzinfo=timezone.get_current_timezone())
    _booking(h, make_customer(), "B1", start, 60)
    today, _ = selectors.periods()
    [expected] = selectors.occupancy(today.start, today.start + dt.timedelta(days=7))
    assert expected["booked_minutes"] == 60 and expected["open_minutes"] == 5 * 420 + 360  # any 7 days: one week
    html = boss.get("/admin/").content.decode()
    assert f"{expected['booked_minutes']}/{expected['open_minutes']}" in html and f"{expected['rate']}%" in html


def test_occupancy_reads_every_teachers_hours_in_the_same_four_queries(
    hours_teacher, make_customer, django_assert_num_queries
):
    from apps.appointments.models import Service, WeeklyHours
    from apps.catalog.models import Kind, Product, Teacher

    h = hours_teacher
    week = (h.at(0), h.at(0, day=h.monday + dt.timedelta(days=7)))
    for i in range(5):  # five more teachers: a 60-minute service each, Mondays 10-12, one Monday off
        teacher = Teacher.objects.create(name=f"老师{i}")
        product = Product.objects.create(category=h.long.category, name=f"咨询{i}", kind=Kind.CONSULTATION)
        Service.objects.create(teacher=teacher, product=product, duration_minutes=60)
        WeeklyHours.objects.create(teacher=teacher, weekday=1, windows=[["10:00", "12:00"]])
        if i == 0:
            DateOverride.objects.create(teacher=teacher, date=h.monday, off=True)
    with django_assert_num_queries(4):  # teachers, bookings, weekly hours, overrides
        rows = selectors.occupancy(*week)
    assert [row["open_minutes"] for row in rows] == [5 * 420 + 360, 0, 120, 120, 120, 120]
