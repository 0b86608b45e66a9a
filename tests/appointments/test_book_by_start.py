"""Confirm and create by ``start`` (API.md "Booking"): availability decides, the database refuses
overlaps, the order answer carries its booking, and a cancel gives the time back."""

import datetime as dt

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.appointments import bookings
from apps.appointments.exceptions import SlotUnavailable
from apps.appointments.models import Booking, Slot
from apps.catalog.models import Sku
from apps.orders.models import Order


def confirm(api, sku, start, **extra):
    body = {"items": [{"sku_id": sku.pk, "quantity": 1}], "start": start.isoformat(), **extra}
    return api.post("/api/v1/orders/confirm", body, format="json")


def create(api, confirmed):
    return api.post("/api/v1/orders", {"order_key": confirmed.json()["order_key"]}, format="json")


def listed(client, h, product, day):
    body = client.get(
        f"/api/v1/teachers/{h.teacher.pk}/availability",
        {"product_id": product.pk, "from": day.isoformat(), "to": day.isoformat()},
    ).json()
    return [s[11:16] for s in body["days"][0]["starts"]]


def test_confirm_and_create_by_start_book_the_range_and_the_order_shows_it(api, client, hours_teacher):
    h = hours_teacher
    confirmed = confirm(api, h.long_sku, h.at(11))
    assert confirmed.status_code == 200, confirmed.json()
    slot = confirmed.json()["slot"]
    assert (slot["id"], slot["start"], slot["end"]) == (None, h.at(11).isoformat(), h.at(12).isoformat())
    created = create(api, confirmed)
    assert created.status_code == 201, created.json()
    order = created.json()
    assert order["booking"] == {
        "teacher_id": h.teacher.pk,
        "product_id": h.long.pk,
        "start": h.at(11).isoformat(),
        "end": h.at(12).isoformat(),
        "attendance": "",
        "reschedules": 0,
    }
    booking = Booking.objects.get(order_no=order["order_no"])
    assert booking.live and booking.blocked_until == h.at(12, 15)
    assert booking.hold_until == Order.objects.get(order_no=order["order_no"]).pay_deadline
    slot_row = Slot.objects.get(pk=order["slot"]["id"])
    live_on_row = Booking.objects.filter(slot=slot_row, live=True).count()
    assert (slot_row.start, slot_row.end, live_on_row, booking.slot_id) == (h.at(11), h.at(12), 1, slot_row.pk)
    # 10:00-10:30 (+15) still fits before it; 10:30 no longer does, whatever the service.
    assert listed(client, h, h.short, h.monday)[:4] == ["09:00", "09:30", "10:00", "14:00"]


def test_a_start_not_listed_is_409_slot_unavailable(api, hours_teacher):
    h = hours_teacher
    for start in (h.at(11, 30), h.at(9, 10), h.at(10, 0, h.monday + dt.timedelta(days=6)), h.at(19)):
        answer = confirm(api, h.long_sku, start)
        assert (answer.status_code, answer.json()["code"]) == (409, "slot_unavailable"), start
    both = confirm(api, h.long_sku, h.at(9), slot_id=1)
    assert (both.status_code, both.json()["code"]) == (400, "invalid")


def test_the_second_create_of_an_overlapping_start_is_409_and_writes_nothing(make_customer, make_api, hours_teacher):
    h = hours_teacher
    first, second, third = (make_api(make_customer()) for _ in range(3))
    a = confirm(first, h.short_sku, h.at(10))  # 10:00-10:30, busy to 10:45
    b = confirm(second, h.long_sku, h.at(9, 30))  # 09:30-10:30: overlaps
    c = confirm(third, h.long_sku, h.at(11))  # 11:00: 15 minutes after 10:45? clear
    assert a.status_code == b.status_code == c.status_code == 200
    assert create(first, a).status_code == 201
    refused = create(second, b)
    assert (refused.status_code, refused.json()["code"]) == (409, "slot_unavailable")
    assert create(third, c).status_code == 201
    assert Order.objects.count() == 2 and Booking.objects.filter(live=True).count() == 2
    assert Sku.objects.get(pk=h.long_sku.pk).stock == 999  # the refused create kept nothing


def test_cancel_releases_the_booking_and_payment_holds_it_for_good(api, client, hours_teacher, settings):
    h = hours_teacher
    order = create(api, confirm(api, h.long_sku, h.at(14))).json()
    assert "14:00" not in listed(client, h, h.long, h.monday)
    assert api.post(f"/api/v1/orders/{order['order_no']}/cancel").status_code == 200
    booking = Booking.objects.get(order_no=order["order_no"])
    assert (booking.live, booking.released_at is not None) == (False, True)
    assert bookings.booking_release(order_no=order["order_no"]) is None  # once only
    assert "14:00" in listed(client, h, h.long, h.monday)
    assert Booking.objects.filter(slot_id=order["slot"]["id"], live=True).count() == 0

    again = create(api, confirm(api, h.long_sku, h.at(14))).json()  # the same start again
    assert Booking.objects.get(order_no=again["order_no"]).live
    assert bookings.booking_paid(order_no=again["order_no"]) == 1
    assert Booking.objects.get(order_no=again["order_no"]).hold_until is None


def test_on_sqlite_the_write_lock_is_taken_before_the_check(customer, hours_teacher, is_postgres):
    """SQLite serialises writers: the booking's first statement is an UPDATE (the write lock),
    so a racing create waits for this transaction and then reads its row and is refused."""
    if is_postgres:
        pytest.skip("PostgreSQL: the exclusion constraint decides (tests/concurrency)")
    h = hours_teacher
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        h.book(h.long, h.at(9), h.at(10), "S1", customer)
    statements = [q["sql"] for q in queries.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    assert statements[0].startswith('UPDATE "appointments_teacherrules"')
    with pytest.raises(SlotUnavailable), transaction.atomic():
        h.book(h.short, h.at(10), h.at(10, 30), "S2", customer)
    assert list(Booking.objects.values_list("order_no", "live")) == [("S1", True)]


def test_the_database_refuses_overlapping_live_bookings_without_the_check(customer, hours_teacher, monkeypatch):
    """The last line: with the read check switched off, the insert itself is refused (the
    exclusion constraint on PostgreSQL; on SQLite the serialised check is the guard, so this
    asserts the constraint only where it exists)."""
    h = hours_teacher
    monkeypatch.setattr(bookings, "_clear_range", lambda **kwargs: None)
    with transaction.atomic():
        h.book(h.long, h.at(9), h.at(10), "D1", customer)
    if connection.vendor != "postgresql":
        return
    with pytest.raises(SlotUnavailable), transaction.atomic():
        h.book(h.short, h.at(10), h.at(10, 30), "D2", customer)
    with transaction.atomic():  # exactly the buffer later: allowed
        h.book(h.short, h.at(10, 15), h.at(10, 45), "D3", customer)
    assert sorted(Booking.objects.values_list("order_no", flat=True)) == ["D1", "D3"]
    assert timezone.localtime(Booking.objects.get(order_no="D3").blocked_until).hour == 11


def test_the_legacy_slot_list_is_derived_from_availability_of_the_first_service(api, client, hours_teacher):
    h = hours_teacher
    day = h.monday.isoformat()
    listed = client.get(f"/api/v1/teachers/{h.teacher.pk}/slots", {"from": day, "to": day}).json()
    starts = [s["start"][11:16] for s in listed]
    assert starts[:3] == ["09:00", "09:30", "10:00"] and len(starts) == 6 + 8  # 30 minutes, step 30
    assert all(s["available"] for s in listed) and listed[0]["end"][11:16] == "09:30"
    first = listed[0]["id"]
    body = {"items": [{"sku_id": h.short_sku.pk, "quantity": 1}], "slot_id": first}
    confirmed = api.post("/api/v1/orders/confirm", body, format="json")
    order = create(api, confirmed).json()
    assert order["booking"]["start"] == h.at(9).isoformat() and order["slot"]["id"] == first
    again = client.get(f"/api/v1/teachers/{h.teacher.pk}/slots", {"from": day, "to": day}).json()
    assert [(s["start"][11:16], s["available"]) for s in again][:3] == [
        ("09:00", False),
        ("10:00", True),
        ("10:30", True),
    ]
