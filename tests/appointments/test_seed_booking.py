"""The demo's two styles of teacher (API.md Booking, demo data): the first with weekly hours, a
60- and a 30-minute service, buffer 15 and step 30; the second on the legacy one-hour grid."""

import datetime as dt

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.appointments.models import Service, WeeklyHours
from apps.catalog.models import Kind, Product


@pytest.fixture
def demo(db):
    call_command("loaddata", "fixtures/demo.json", verbosity=0)
    call_command("seed_booking", stdout=open("/dev/null", "w"))


def _next(weekday: int) -> dt.date:
    """The first date with ``weekday`` (1 = Monday) at least two days ahead (past min notice)."""
    day = timezone.localdate() + dt.timedelta(days=2)
    return day + dt.timedelta(days=(weekday - day.isoweekday()) % 7)


def _starts(client, teacher_id: int, day: dt.date, product_id: int | None = None) -> list[str]:
    query = {"from": day.isoformat(), "to": day.isoformat()}
    if product_id:
        query["product_id"] = product_id
    body = client.get(f"/api/v1/teachers/{teacher_id}/availability", query).json()
    return [start[11:16] for start in body["days"][0]["starts"]]


def test_first_teacher_has_hours_and_two_services_second_keeps_the_grid(client, demo):
    card = client.get("/api/v1/teachers/1").json()
    assert [s["duration_minutes"] for s in card["services"]] == [60, 30]
    assert card["hours"]["weekly"]["1"] == [["09:00", "12:00"], ["14:00", "18:00"]]
    assert card["hours"]["weekly"]["6"] == [["10:00", "16:00"]]
    assert card["hours"]["weekly"]["7"] == []
    assert (card["hours"]["buffer_minutes"], card["hours"]["step_minutes"]) == (15, 30)
    monday = _next(1)
    assert _starts(client, 1, monday) == ["09:00", "09:30", "10:00", "10:30", "11:00"] + [
        "14:00",
        "14:30",
        "15:00",
        "15:30",
        "16:00",
        "16:30",
        "17:00",
    ]
    short = card["services"][1]["product_id"]
    assert Product.objects.get(pk=short).kind == Kind.CONSULTATION
    assert _starts(client, 1, monday, short)[-1] == "17:30"
    assert _starts(client, 1, _next(7)) == []
    assert _starts(client, 2, monday) == ["09:00", "11:00", "13:00", "15:00", "17:00", "19:00"]


def test_seed_booking_runs_once(demo):
    call_command("seed_booking", stdout=open("/dev/null", "w"))
    assert WeeklyHours.objects.filter(teacher_id=1).count() == 7
    assert Service.objects.filter(teacher_id=1).count() == 2
    assert not WeeklyHours.objects.filter(teacher_id=2).exists()
