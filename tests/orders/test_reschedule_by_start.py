"""Reschedule by ``start`` (API.md "Booking"): availability without the order's own booking,
at most RESCHEDULE_MAX moves, the booking and the grid rows follow."""

import datetime as dt

import pytest

from apps.appointments.models import Booking
from apps.orders.models import Order, OrderEvent


@pytest.fixture
def paid(make_customer, make_api, hours_teacher):
    h = hours_teacher
    h.day = h.monday + dt.timedelta(days=7)
    api = make_api(make_customer(balance_fen=100000))
    body = {"items": [{"sku_id": h.long_sku.pk, "quantity": 1}], "start": h.at(9, day=h.day).isoformat()}
    confirmed = api.post("/api/v1/orders/confirm", body, format="json")
    order = api.post("/api/v1/orders", {"order_key": confirmed.json()["order_key"]}, format="json").json()
    assert api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json").status_code == 200
    return h, api, order["order_no"]


def move(api, order_no, start):
    return api.post(f"/api/v1/orders/{order_no}/reschedule", {"start": start.isoformat()}, format="json")


def test_reschedule_by_start_moves_the_booking_even_onto_its_own_old_time(paid, settings):
    h, api, order_no = paid
    old_slot = Order.objects.get(order_no=order_no).slot_id
    moved = move(api, order_no, h.at(9, 30, day=h.day))  # overlaps its own 09:00-10:00 only
    assert moved.status_code == 200, moved.json()
    body = moved.json()
    assert body["booking"]["start"] == h.at(9, 30, day=h.day).isoformat() and body["booking"]["reschedules"] == 1
    assert body["booking"]["end"] == h.at(10, 30, day=h.day).isoformat()
    booking = Booking.objects.get(order_no=order_no)
    assert (booking.start, booking.blocked_until, booking.live) == (
        h.at(9, 30, day=h.day),
        h.at(10, 45, day=h.day),
        True,
    )
    assert Booking.objects.filter(slot_id=old_slot, live=True).count() == 0
    assert (
        Booking.objects.filter(slot_id=body["slot"]["id"], live=True).count() == 1
        and body["slot"]["start"] == body["booking"]["start"]
    )
    assert OrderEvent.objects.filter(note__startswith="改约").count() == 1


def test_at_most_reschedule_max_moves_then_409_limit_exceeded(paid, settings):
    h, api, order_no = paid
    settings.RESCHEDULE_MAX = 2
    assert move(api, order_no, h.at(14, day=h.day)).status_code == 200
    assert move(api, order_no, h.at(15, day=h.day)).status_code == 200
    third = move(api, order_no, h.at(16, day=h.day))
    assert (third.status_code, third.json()["code"]) == (409, "limit_exceeded")
    booking = Booking.objects.get(order_no=order_no)
    assert (booking.start, booking.reschedules) == (h.at(15, day=h.day), 2)


def test_a_start_not_listed_is_409_and_nothing_moves(paid, make_customer, make_api):
    h, api, order_no = paid
    other = make_api(make_customer(balance_fen=100000))
    body = {"items": [{"sku_id": h.short_sku.pk, "quantity": 1}], "start": h.at(11, day=h.day).isoformat()}
    confirmed = other.post("/api/v1/orders/confirm", body, format="json")
    assert other.post("/api/v1/orders", {"order_key": confirmed.json()["order_key"]}, format="json").status_code == 201
    for start in (
        h.at(10, 30, day=h.day),
        h.at(12, day=h.day),
        h.at(9, 10, day=h.day),
    ):  # 11:00 taken; no hours; off grid
        refused = move(api, order_no, start)
        assert (refused.status_code, refused.json()["code"]) == (409, "slot_unavailable"), start
    booking = Booking.objects.get(order_no=order_no)
    assert (booking.start, booking.reschedules) == (h.at(9, day=h.day), 0)
    both = api.post(
        f"/api/v1/orders/{order_no}/reschedule", {"start": h.at(14, day=h.day).isoformat(), "slot_id": 1}, format="json"
    )
    assert (both.status_code, both.json()["code"]) == (400, "invalid")
