"""Availability (API.md "Booking"): the pure rule, and GET /teachers/{id}/availability."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.appointments.availability import Rules, day_starts, parse_windows
from apps.appointments.models import Booking, DateOverride, Service, TeacherRules, WeeklyHours
from apps.catalog.models import Category, Kind, Product, Sku, Teacher

TZ = timezone.get_current_timezone()
MONDAY = dt.date(2026, 12, 7)  # a Monday
NOW = dt.datetime(2026, 12, 6, 8, 0, tzinfo=TZ)  # the Sunday before, 08:00


def at(h, m=0, day=MONDAY):
    return dt.datetime(day.year, day.month, day.day, h, m, tzinfo=TZ)


def starts(*, windows=(("09:00", "12:00"), ("14:00", "18:00")), duration=60, rules=None, busy=(), live=0, now=NOW):
    found = day_starts(
        date=MONDAY,
        windows=parse_windows([list(w) for w in windows]),
        duration_minutes=duration,
        rules=rules or Rules(),
        busy=list(busy),
        live_that_day=live,
        now=now,
    )
    return [f"{s:%H:%M}" for s in found]


def test_whole_service_inside_one_window_on_the_step_grid():
    assert starts() == [
        "09:00",
        "09:30",
        "10:00",
        "10:30",
        "11:00",
        "14:00",
        "14:30",
        "15:00",
        "15:30",
        "16:00",
        "16:30",
        "17:00",
    ]
    assert starts(duration=30, windows=(("09:00", "10:00"),)) == ["09:00", "09:30"]
    assert starts(windows=(("09:15", "11:00"),), rules=Rules(step_minutes=45)) == [
        "09:15",
        "10:00",
    ]  # from the window's start
    assert starts(windows=(("09:00", "09:50"),)) == []  # 60 minutes do not fit


def test_buffer_kept_clear_of_every_live_booking_on_both_sides():
    # A live 30-minute booking 10:00-10:30 with a 15-minute buffer: busy [10:00, 10:45).
    busy = [(at(10), at(10, 45))]
    rules = Rules(buffer_minutes=15)
    # 60 minutes: 08:30-09:30 leaves 30 minutes; 09:00-10:00 would leave none; 11:00 is 15 after.
    assert starts(windows=(("08:00", "12:00"),), busy=busy, rules=rules) == ["08:00", "08:30", "11:00"]
    # The buffer each side of the booking is kept (busy ranges here already carry the buffer after).
    assert starts(windows=(("08:00", "12:00"),), busy=busy, rules=Rules(buffer_minutes=45)) == ["08:00", "11:00"]
    assert starts(duration=30, windows=(("09:00", "12:00"),), busy=busy, rules=rules) == ["09:00", "11:00", "11:30"]


def test_min_notice_horizon_and_daily_max():
    assert starts(now=at(9, 1), rules=Rules(min_notice_minutes=60))[:2] == ["10:30", "11:00"]
    assert starts(now=at(8, 0), rules=Rules(min_notice_minutes=60))[0] == "09:00"  # exactly the notice
    assert starts(now=at(9, 0, MONDAY - dt.timedelta(days=1)), rules=Rules(horizon_days=1)) == ["09:00"]
    assert starts(live=2, rules=Rules(daily_max=2)) == []
    assert len(starts(live=1, rules=Rules(daily_max=2))) == 12


@pytest.fixture
def booked_teacher(db):
    category = Category.objects.create(name="咨询", kind=Kind.CONSULTATION)
    teacher = Teacher.objects.create(name="王")
    products = []
    for minutes in (30, 60):
        product = Product.objects.create(category=category, name=f"{minutes}分钟", kind=Kind.CONSULTATION)
        Sku.objects.create(product=product, price_fen=100 * minutes, stock=1000)
        Service.objects.create(teacher=teacher, product=product, duration_minutes=minutes, sort=minutes)
        products.append(product)
    teacher.product = products[0]
    teacher.save()
    for weekday in range(1, 6):
        WeeklyHours.objects.create(teacher=teacher, weekday=weekday, windows=[["09:00", "12:00"], ["14:00", "18:00"]])
    WeeklyHours.objects.create(teacher=teacher, weekday=6, windows=[["10:00", "16:00"]])
    TeacherRules.objects.create(teacher=teacher, buffer_minutes=15, step_minutes=30, min_notice_minutes=0)
    return teacher, products


def _days(client, teacher, **query):
    answer = client.get(f"/api/v1/teachers/{teacher.pk}/availability", query)
    assert answer.status_code == 200, answer.content
    return answer.json()


def test_availability_lists_every_date_in_order_with_overrides_and_live_bookings(client, booked_teacher, customer):
    teacher, (short, long) = booked_teacher
    first = timezone.localdate() + dt.timedelta(days=1)
    while first.isoweekday() != 1:
        first += dt.timedelta(days=1)
    DateOverride.objects.create(teacher=teacher, date=first + dt.timedelta(days=1), off=True)
    DateOverride.objects.create(teacher=teacher, date=first + dt.timedelta(days=2), windows=[["19:00", "20:00"]])
    start = dt.datetime.combine(first, dt.time(10), tzinfo=TZ)
    Booking.objects.create(
        teacher=teacher,
        product=short,
        start=start,
        end=start + dt.timedelta(minutes=30),
        blocked_until=start + dt.timedelta(minutes=45),
        order_no="B1",
        customer=customer,
    )
    body = _days(
        client,
        teacher,
        product_id=long.pk,
        **{"from": first.isoformat(), "to": (first + dt.timedelta(days=6)).isoformat()},
    )
    assert (body["teacher_id"], body["product_id"], body["duration_minutes"]) == (teacher.pk, long.pk, 60)
    assert [d["date"] for d in body["days"]] == [(first + dt.timedelta(days=i)).isoformat() for i in range(7)]
    monday = [s[11:16] for s in body["days"][0]["starts"]]
    assert monday == ["11:00", "14:00", "14:30", "15:00", "15:30", "16:00", "16:30", "17:00"]
    assert body["days"][0]["starts"][0].endswith("+08:00")
    assert body["days"][1]["starts"] == []  # the day off
    assert [s[11:16] for s in body["days"][2]["starts"]] == ["19:00"]  # override windows replace weekly
    assert [s[11:16] for s in body["days"][5]["starts"]][:2] == ["10:00", "10:30"]  # Saturday
    assert body["days"][6]["starts"] == []  # Sunday off
    Booking.objects.filter(order_no="B1").update(live=False)  # released: the time is free again
    monday = _days(client, teacher, product_id=long.pk, **{"from": first.isoformat(), "to": first.isoformat()})
    assert len(monday["days"][0]["starts"]) == 5 + 7


def test_an_unpaid_booking_past_its_deadline_does_not_block(client, booked_teacher, customer):
    teacher, (short, _) = booked_teacher
    day = timezone.localdate() + dt.timedelta(days=1)
    while day.isoweekday() != 2:
        day += dt.timedelta(days=1)
    start = dt.datetime.combine(day, dt.time(9), tzinfo=TZ)
    Booking.objects.create(
        teacher=teacher,
        product=short,
        start=start,
        end=start + dt.timedelta(minutes=30),
        blocked_until=start + dt.timedelta(minutes=45),
        order_no="B2",
        customer=customer,
        hold_until=timezone.now() - dt.timedelta(seconds=1),
    )
    body = _days(client, teacher, product_id=short.pk, **{"from": day.isoformat(), "to": day.isoformat()})
    assert body["days"][0]["starts"][0][11:16] == "09:00"


@pytest.mark.parametrize(
    "query",
    [
        {"from": "2026-13-01"},
        {"from": "2027-01-10", "to": "2027-01-09"},
        {"from": "2027-01-01", "to": "2027-02-01"},  # 32 days
        {"product_id": "x"},
    ],
)
def test_bad_availability_queries_are_400_json(client, booked_teacher, query):
    teacher, _ = booked_teacher
    answer = client.get(f"/api/v1/teachers/{teacher.pk}/availability", query)
    assert answer.status_code == 400 and answer.json()["code"] == "invalid"


def test_another_teachers_product_is_400_and_unknown_teacher_404(client, booked_teacher, consultation):
    teacher, _ = booked_teacher
    answer = client.get(f"/api/v1/teachers/{teacher.pk}/availability", {"product_id": consultation.product.pk})
    assert answer.status_code == 400 and answer.json()["code"] == "invalid"
    assert client.get("/api/v1/teachers/999999/availability").json()["code"] == "not_found"


def test_teacher_card_has_services_and_hours(client, booked_teacher):
    teacher, (short, long) = booked_teacher
    DateOverride.objects.create(teacher=teacher, date=timezone.localdate() + dt.timedelta(days=3), off=True)
    body = client.get(f"/api/v1/teachers/{teacher.pk}").json()
    assert [(s["product_id"], s["duration_minutes"], s["price_fen"]) for s in body["services"]] == [
        (short.pk, 30, 3000),
        (long.pk, 60, 6000),
    ]
    assert body["services"][0]["sku_id"] == short.skus.get().pk and body["services"][0]["name"] == "30分钟"
    hours = body["hours"]
    assert hours["weekly"]["1"] == [["09:00", "12:00"], ["14:00", "18:00"]]
    assert hours["weekly"]["6"] == [["10:00", "16:00"]] and hours["weekly"]["7"] == []
    assert hours["overrides"] == [
        {"date": (timezone.localdate() + dt.timedelta(days=3)).isoformat(), "off": True, "hours": []}
    ]
    assert (hours["buffer_minutes"], hours["step_minutes"], hours["horizon_days"], hours["daily_max"]) == (
        15,
        30,
        30,
        None,
    )
    assert hours["min_notice_minutes"] == 0


def test_windows_are_read_by_one_function_for_availability_the_hours_service_and_the_week_grid():
    from apps.appointments.hours import windows_clean
    from starmall.errors import InvalidInput

    assert parse_windows([["14:00", "18:00"], ["09:00", "12:00"]]) == [(540, 720), (840, 1080)]
    assert parse_windows([["22:00", "24:00"]]) == [(1320, 1440)]  # "24:00": midnight at the day's end
    assert windows_clean([["14:00", "18:00"], ["09:00", "12:00"]]) == [["09:00", "12:00"], ["14:00", "18:00"]]
    for bad in ([["09:00", "12:00"], ["11:00", "13:00"]], [["12:00", "09:00"]], [["9:0", "10:00"]], [["09:00"]], "x"):
        with pytest.raises(InvalidInput):
            parse_windows(bad)
        with pytest.raises(InvalidInput):
            windows_clean(bad)
