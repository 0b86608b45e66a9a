"""Slot generation (6 a day, 8 days, Shanghai time), the slot list API, book/release once."""

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from django.db import transaction

from apps.appointments import slots
from apps.appointments.exceptions import SlotUnavailable
from apps.appointments.models import Booking, Slot
from apps.catalog.models import Teacher

pytestmark = pytest.mark.django_db
SHANGHAI = ZoneInfo("Asia/Shanghai")


def test_generate_makes_six_slots_a_day_for_eight_days_and_rerun_adds_nothing():
    Teacher.objects.create(name="甲")
    Teacher.objects.create(name="乙")
    Teacher.objects.create(name="停用", is_active=False)
    now = dt.datetime(2026, 12, 1, 8, 0, tzinfo=SHANGHAI)  # before the first slot of the day
    first = slots.slots_generate(now=now)
    assert first.created == 2 * 8 * 6
    assert slots.slots_generate(now=now).created == 0
    assert Slot.objects.count() == 96
    starts = sorted({s.astimezone(SHANGHAI) for s in Slot.objects.values_list("start", flat=True)})
    assert starts[0] == dt.datetime(2026, 12, 1, 9, 0, tzinfo=SHANGHAI)
    assert starts[-1] == dt.datetime(2026, 12, 8, 19, 0, tzinfo=SHANGHAI)
    assert {s.hour for s in starts} == {9, 11, 13, 15, 17, 19}
    slot = Slot.objects.first()
    assert slot.end - slot.start == dt.timedelta(hours=1)


def test_generate_skips_started_slots_and_removes_past_free_ones():
    teacher = Teacher.objects.create(name="甲")
    slots.slots_generate(now=dt.datetime(2026, 12, 1, 8, 0, tzinfo=SHANGHAI))
    later = dt.datetime(2026, 12, 2, 12, 0, tzinfo=SHANGHAI)  # day 2, 09:00 and 11:00 have begun
    result = slots.slots_generate(now=later)
    assert result.removed == 6 + 2  # all of Dec 1 and the first two of Dec 2, none booked
    assert result.created == 6  # Dec 9 appears
    assert Slot.objects.filter(teacher=teacher).count() == 8 * 6 - 8 + 6


def _book_slot(consultation, slot, order_no, customer):
    """Book the legacy slot as the ``slot_id`` path does: read as its start, booked by start."""
    start = slots.slot_start_of(slot_id=slot.pk, teacher_id=consultation.teacher.pk)
    return slots.slot_book_start(
        product_id=consultation.product.pk, start=start, order_no=order_no, customer_id=customer.pk
    )


def test_book_respects_capacity_and_release_happens_once(customer, consultation):
    slot = consultation.slots[0]
    with transaction.atomic():
        _book_slot(consultation, slot, "A1", customer)
    with pytest.raises(SlotUnavailable), transaction.atomic():  # as in the order's transaction
        _book_slot(consultation, slot, "A2", customer)
    assert Booking.objects.filter(slot_id=slot.pk, live=True).count() == 1
    assert slots.slot_release(order_no="A1") is True
    assert slots.slot_release(order_no="A1") is False
    assert Booking.objects.filter(slot_id=slot.pk, live=True).count() == 0
    assert Booking.objects.filter(live=True).count() == 0  # kept, released once
    assert Booking.objects.get(order_no="A1").released_at is not None


def test_book_refuses_a_slot_within_the_minimum_notice(customer, consultation, settings):
    slot = consultation.slots[0]
    settings.BOOKING_MIN_NOTICE_MINUTES += int((slot.start - slots.booking_open_after()).total_seconds() // 60) + 1
    with pytest.raises(SlotUnavailable), transaction.atomic():
        _book_slot(consultation, slot, "A1", customer)
    assert Booking.objects.filter(slot_id=slot.pk, live=True).count() == 0 and Booking.objects.count() == 0


def test_a_slot_id_of_another_teacher_is_refused(customer, consultation):
    other = Teacher.objects.create(name="乙")
    slots.slots_generate()
    foreign = Slot.objects.filter(teacher=other, start__gt=slots.booking_open_after()).first()
    with pytest.raises(SlotUnavailable):
        slots.slot_start_of(slot_id=foreign.pk, teacher_id=consultation.teacher.pk)
    assert slots.slot_start_of(slot_id=foreign.pk, teacher_id=other.pk) == foreign.start


def test_slot_list_api_by_teacher_and_dates(client, consultation, settings):
    from django.utils import timezone

    today = timezone.localdate()
    response = client.get(
        f"/api/v1/teachers/{consultation.teacher.pk}/slots",
        {"from": today.isoformat(), "to": (today + dt.timedelta(days=7)).isoformat()},
    )
    assert response.status_code == 200
    listed = response.json()
    # No bookings: the list is the bookable starts, those more than BOOKING_MIN_NOTICE_MINUTES away.
    bookable = Slot.objects.filter(teacher=consultation.teacher, start__gt=slots.booking_open_after())
    assert len(listed) == bookable.count() == len(consultation.slots) > 40
    assert set(listed[0]) == {"id", "start", "end", "capacity", "booked", "available"}
    assert listed[0]["start"].endswith("+08:00")
    assert [s["id"] for s in listed if s["available"]] == [s.pk for s in consultation.slots]
    tomorrow = client.get(
        f"/api/v1/teachers/{consultation.teacher.pk}/slots",
        {"from": (today + dt.timedelta(days=1)).isoformat(), "to": (today + dt.timedelta(days=1)).isoformat()},
    ).json()
    assert [dt.datetime.fromisoformat(s["start"]).hour for s in tomorrow] == [9, 11, 13, 15, 17, 19]
    # A start inside the notice is not listed (the contract: available starts and live bookings).
    settings.BOOKING_MIN_NOTICE_MINUTES += (
        int((consultation.slots[0].start - slots.booking_open_after()).total_seconds() // 60) + 1
    )
    nearer = client.get(
        f"/api/v1/teachers/{consultation.teacher.pk}/slots",
        {"from": today.isoformat(), "to": (today + dt.timedelta(days=7)).isoformat()},
    ).json()
    assert [s["id"] for s in nearer] == [s.pk for s in consultation.slots[1:]]


def test_slot_list_api_errors(client, consultation):
    url = f"/api/v1/teachers/{consultation.teacher.pk}/slots"
    assert client.get(url, {"from": "2026-13-01"}).json()["code"] == "invalid"
    assert client.get(url, {"from": "2026-12-10", "to": "2026-12-01"}).status_code == 400
    assert client.get("/api/v1/teachers/999999/slots").status_code == 404
