"""Calendars: the teacher week (free / booked / full / blocked, linking to the slot) and the
almanac month (lunar date, solar term, 宜/忌), each behind its view permission."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.almanac.models import AlmanacDay
from apps.appointments.models import Booking, Slot
from apps.backoffice.selectors import SHANGHAI

pytestmark = pytest.mark.django_db


def test_week_shows_each_slot_state_in_shanghai_time(boss, consultation, make_customer):
    day = timezone.localdate() + dt.timedelta(days=3)
    slots = list(Slot.objects.filter(teacher=consultation.teacher, start__date__gte=day).order_by("start")[:3])
    Slot.objects.filter(pk=slots[0].pk).update(is_open=False)
    Booking.objects.create(  # the booking, not the slot row's count, makes a start taken
        teacher=consultation.teacher,
        product=consultation.product,
        start=slots[1].start,
        end=slots[1].end,
        blocked_until=slots[1].end,
        order_no="W1",
        customer=make_customer(),
    )
    html = boss.get(
        "/admin/backoffice/week/", {"teacher": consultation.teacher.pk, "start": day.isoformat()}
    ).content.decode()
    assert html.count('data-state="blocked"') == 1
    assert html.count('data-state="full"') == 1
    assert html.count('data-state="free"') == 6 * 7 - 2  # the default grid: six a day, a week
    assert f"/admin/appointments/slot/{slots[0].pk}/change/" in html
    first = timezone.localtime(slots[0].start, SHANGHAI).strftime("%H:%M")
    assert f"<th>{first}</th>" in html and first == "09:00"


def test_week_needs_the_slot_view_permission(client, django_user_model):
    user = django_user_model.objects.create_user("x", password="pw-123456", is_staff=True)
    client.force_login(user)
    assert client.get("/admin/backoffice/week/").status_code == 403
    assert client.get("/admin/backoffice/almanac/").status_code == 403


def test_almanac_month_shows_lunar_dates_terms_and_yi_ji(boss):
    from django.core.management import call_command

    call_command("load_almanac", start="2026-12-01", end="2026-12-31", no_progress=True, verbosity=0)
    html = boss.get("/admin/backoffice/almanac/", {"month": "2026-12"}).content.decode()
    dongzhi = AlmanacDay.objects.get(solar_term="冬至")
    assert dongzhi.date.month == 12
    assert "冬至" in html and dongzhi.lunar_text in html
    assert html.count("宜 ") >= 31 and html.count("忌 ") >= 31
