"""The teacher week's hours and bookings (BACKOFFICE.md): working time shaded from weekly hours
and overrides, bookings placed by time with their attendance, a day set to off / other windows /
back through ``apps.appointments.hours``; a teacher's login sets only their own days; bookings
filter by attendance; services, rules and weekly hours edited on the teacher page."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from apps.appointments.models import Booking, DateOverride

pytestmark = pytest.mark.django_db


def _week(client, h):
    monday = h.day - dt.timedelta(days=h.day.weekday())
    return client.get(
        "/admin/backoffice/week/", {"teacher": h.teacher.pk, "start": monday.isoformat()}
    ).content.decode()


def _working(html, day):
    return len(re.findall(rf'data-date="{day:%Y-%m-%d}" data-working="1"', html))


def test_week_shades_hours_and_places_bookings_with_attendance(boss, customer, waitlist_teacher):
    h = waitlist_teacher
    booking = h.book(customer)
    Booking.objects.filter(pk=booking.pk).update(attendance="no_show")
    other = h.day + dt.timedelta(days=1) if h.day.weekday() < 6 else h.day - dt.timedelta(days=1)
    DateOverride.objects.create(teacher=h.teacher, date=other, off=False, windows=[["09:00", "11:00"]])
    html = _week(boss, h)
    assert _working(html, h.day) == 2  # 09:00-10:00 in 30-minute rows
    assert _working(html, other) == 4  # the override's 09:00-11:00
    assert html.count(f'data-order="{booking.order_no}"') == 2
    assert 'data-attendance="no_show"' in html and "09:00-10:00 顾客爽约" in html


def test_a_day_set_off_then_windows_then_back_through_the_form(boss, customer, waitlist_teacher):
    h = waitlist_teacher
    h.book(customer)
    url = "/admin/backoffice/week/day/"
    form = {"teacher": h.teacher.pk, "date": h.day.isoformat()}
    response = boss.post(url, {**form, "action": "off"}, follow=True)
    override = DateOverride.objects.get(teacher=h.teacher, date=h.day)
    assert (override.off, override.windows) == (True, [])
    assert "已有预约保留" in response.content.decode()  # the booking is kept and named
    assert _working(_week(boss, h), h.day) == 0
    boss.post(url, {**form, "action": "windows", "hours": "14:00-16:00, 09:00-10:00"})
    override.refresh_from_db()
    assert (override.off, override.windows) == (False, [["09:00", "10:00"], ["14:00", "16:00"]])
    bad = boss.post(url, {**form, "action": "windows", "hours": "10:00-09:00"}, follow=True)
    assert "未设置" in bad.content.decode()
    override.refresh_from_db()
    assert override.windows == [["09:00", "10:00"], ["14:00", "16:00"]]  # nothing half-written
    boss.post(url, {**form, "action": "clear"})
    assert not DateOverride.objects.filter(teacher=h.teacher, date=h.day).exists()
    assert Booking.objects.filter(live=True).count() == 1


def test_a_teacher_login_sets_only_their_own_days(role_client, waitlist_teacher, make_customer):
    from apps.catalog.models import Teacher

    h = waitlist_teacher
    teacher_client = role_client("老师")
    h.teacher.user = teacher_client.user
    h.teacher.save(update_fields=["user"])
    stranger = Teacher.objects.create(name="别人")
    url = "/admin/backoffice/week/day/"
    refused = teacher_client.post(url, {"teacher": stranger.pk, "date": h.day.isoformat(), "action": "off"})
    assert refused.status_code == 403 and not DateOverride.objects.exists()
    teacher_client.post(url, {"teacher": h.teacher.pk, "date": h.day.isoformat(), "action": "off"})
    assert DateOverride.objects.get().teacher_id == h.teacher.pk
    finance = role_client("财务")
    assert finance.post(url, {"teacher": h.teacher.pk, "date": h.day.isoformat(), "action": "clear"}).status_code == 403
    assert DateOverride.objects.count() == 1


def test_bookings_filter_by_attendance_and_a_teacher_sees_their_own(boss, role_client, waitlist_teacher, make_customer):
    from apps.catalog.models import Teacher

    h = waitlist_teacher
    marked = h.book(make_customer())
    h.book(make_customer(), h.day + dt.timedelta(days=1))
    Booking.objects.filter(pk=marked.pk).update(attendance="attended")
    stranger = Teacher.objects.create(name="别人")
    Booking.objects.create(
        teacher=stranger,
        start=marked.start,
        end=marked.end,
        blocked_until=marked.end,
        order_no="SM-OTHER",
        customer=make_customer(),
        live=True,
    )
    page = boss.get("/admin/appointments/booking/", {"attendance": "attended"}).content.decode()
    assert marked.order_no in page and page.count("SM000") == 1
    teacher_client = role_client("老师")
    h.teacher.user = teacher_client.user
    h.teacher.save(update_fields=["user"])
    own = teacher_client.get("/admin/appointments/booking/").content.decode()
    assert own.count("SM000") == 2 and "SM-OTHER" not in own


def test_the_teacher_page_edits_services_rules_and_weekly_hours(boss, waitlist_teacher):
    h = waitlist_teacher
    page = boss.get(f"/admin/catalog/teacher/{h.teacher.pk}/change/").content.decode()
    assert "services-TOTAL_FORMS" in page and "booking_rules-TOTAL_FORMS" in page
    assert "weekly_hours-TOTAL_FORMS" in page and "09:00-10:00" in page


def test_waitlist_entries_listed_for_staff_and_a_teacher_sees_their_own(role_client, waitlist_teacher, make_customer):
    from apps.appointments.models import WaitlistEntry
    from apps.catalog.models import Teacher

    h = waitlist_teacher
    waiting, other = make_customer(), make_customer()
    type(waiting).objects.filter(pk=waiting.pk).update(nickname="等位甲")
    type(other).objects.filter(pk=other.pk).update(nickname="等位乙")
    WaitlistEntry.objects.create(customer=waiting, teacher=h.teacher, product=h.product, date=h.day)
    stranger = Teacher.objects.create(name="别人")
    WaitlistEntry.objects.create(customer=other, teacher=stranger, product=h.product, date=h.day)
    service = role_client("客服")
    page = service.get("/admin/appointments/waitlistentry/", {"status": "waiting"})
    assert page.status_code == 200
    assert page.content.decode().count("等位") == 2
    assert (
        service.get(f"/admin/appointments/waitlistentry/{WaitlistEntry.objects.first().pk}/change/").status_code == 200
    )
    assert service.post("/admin/appointments/waitlistentry/add/", {}).status_code == 403  # read-only
    teacher_client = role_client("老师")
    h.teacher.user = teacher_client.user
    h.teacher.save(update_fields=["user"])
    own = teacher_client.get("/admin/appointments/waitlistentry/").content.decode()
    assert "等位甲" in own and "等位乙" not in own


def test_a_past_day_is_refused_and_its_override_kept(boss, waitlist_teacher):
    from django.utils import timezone

    h = waitlist_teacher
    yesterday = timezone.localdate() - dt.timedelta(days=1)
    DateOverride.objects.create(teacher=h.teacher, date=yesterday, off=True, windows=[])
    url = "/admin/backoffice/week/day/"
    for form in ({"action": "windows", "hours": "09:00-10:00"}, {"action": "clear"}):
        response = boss.post(url, {"teacher": h.teacher.pk, "date": yesterday.isoformat(), **form}, follow=True)
        assert "未设置：不能修改已经过去的日期。" in response.content.decode()
    assert list(DateOverride.objects.filter(teacher=h.teacher).values_list("date", "off", "windows")) == [
        (yesterday, True, [])
    ]
