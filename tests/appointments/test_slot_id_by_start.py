"""The legacy ``slot_id`` is read as its slot's start and goes the start's way (API.md "Booking"):
one availability check, the same Booking row, the same 409 ``slot_unavailable``."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.appointments import slots
from apps.appointments.models import Booking, DateOverride, Service, Slot
from apps.catalog.models import Product, Sku
from apps.orders.models import Order
from starmall.errors import InvalidState

pytestmark = pytest.mark.django_db


def confirm(api, sku, **choice):
    body = {"items": [{"sku_id": sku.pk, "quantity": 1}], **choice}
    return api.post("/api/v1/orders/confirm", body, format="json")


def create(api, confirmed):
    return api.post("/api/v1/orders", {"order_key": confirmed.json()["order_key"]}, format="json")


def at(day, hour, minute=0):
    return dt.datetime.combine(day, dt.time(hour, minute), tzinfo=timezone.get_current_timezone())


@pytest.fixture
def long_booked(consultation, make_customer):
    """``consultation`` with a second, 120-minute service and a day (two days on) open 09:00-13:00
    on which that service is booked 10:00-12:00 (order L1). ``.day``, ``.long``, ``.eleven``: the
    11:00 grid row, open and counting nothing, inside the booking."""
    c = consultation
    Service.objects.create(teacher=c.teacher, product=c.product, duration_minutes=60, sort=0)
    c.long = Product.objects.create(category=c.product.category, name="深度咨询", kind=c.product.kind)
    Sku.objects.create(product=c.long, specs={"时长": "120分钟"}, price_fen=59900, stock=10)
    Service.objects.create(teacher=c.teacher, product=c.long, duration_minutes=120, sort=1)
    c.day = timezone.localdate() + dt.timedelta(days=2)
    DateOverride.objects.create(teacher=c.teacher, date=c.day, windows=[["09:00", "13:00"]])
    c.eleven = Slot.objects.get(teacher=c.teacher, start=at(c.day, 11))
    assert (c.eleven.is_open, slots.slot_live_bookings(c.eleven)) == (True, 0)
    customer = make_customer()
    slots.slot_book_start(product_id=c.long.pk, start=at(c.day, 10), order_no="L1", customer_id=customer.pk)
    assert slots.slot_live_bookings(c.eleven) == 1  # the 10:00 booking's own row is another one
    return c


def test_a_slot_id_overlapped_by_a_longer_services_booking_is_refused(api, long_booked):
    c = long_booked
    eleven = c.eleven
    refused = confirm(api, c.sku, slot_id=eleven.pk)
    assert (refused.status_code, refused.json()["code"]) == (409, "slot_unavailable")
    by_start = confirm(api, c.sku, start=at(c.day, 11).isoformat())
    assert (by_start.status_code, by_start.json()["code"]) == (409, "slot_unavailable")
    assert refused.json()["message"] == by_start.json()["message"]
    assert list(Booking.objects.filter(live=True).values_list("order_no", flat=True)) == ["L1"]
    assert Order.objects.count() == 0


def test_a_slot_id_books_the_same_booking_as_its_start(api, consultation):
    c = consultation
    slot = c.slots[2]
    by_id = confirm(api, c.sku, slot_id=slot.pk)
    assert by_id.status_code == 200, by_id.json()
    assert by_id.json()["slot"]["id"] == slot.pk
    first = create(api, by_id).json()
    assert first["slot"]["id"] == slot.pk
    fields = ("teacher_id", "product_id", "start", "end", "blocked_until", "slot_id", "live")
    booked_by_id = Booking.objects.filter(order_no=first["order_no"]).values_list(*fields).get()
    assert booked_by_id == (
        c.teacher.pk,
        c.product.pk,
        slot.start,
        slot.start + dt.timedelta(hours=1),
        slot.start + dt.timedelta(hours=1),
        slot.pk,
        True,
    )
    assert api.post(f"/api/v1/orders/{first['order_no']}/cancel").status_code == 200
    by_start = confirm(api, c.sku, start=timezone.localtime(slot.start).isoformat())
    assert by_start.json()["slot"] | {"id": slot.pk} == by_id.json()["slot"]
    second = create(api, by_start).json()
    assert second["slot"]["id"] == slot.pk and second["booking"] == first["booking"]
    assert Booking.objects.filter(order_no=second["order_no"]).values_list(*fields).get() == booked_by_id
    assert (
        Order.objects.get(order_no=second["order_no"]).slot_id == Order.objects.get(order_no=first["order_no"]).slot_id
    )


def test_blocking_a_slot_or_its_day_is_refused_while_a_live_booking_meets_it(long_booked):
    c = long_booked
    with pytest.raises(InvalidState) as refused:
        slots.slot_block(slot_id=c.eleven.pk, blocked=True)
    assert refused.value.detail["booked"] == 1
    assert Slot.objects.get(pk=c.eleven.pk).is_open is True
    nine = Slot.objects.get(teacher=c.teacher, start=at(c.day, 9))
    ten = Slot.objects.get(teacher=c.teacher, start=at(c.day, 10))  # the booking's own grid row
    result = slots.day_block(teacher_id=c.teacher.pk, date=c.day, blocked=True)
    assert [slot_id for slot_id, _ in result.refused] == [ten.pk, c.eleven.pk]
    assert nine.pk in result.changed and c.eleven.pk not in result.changed
    assert not Slot.objects.get(pk=nine.pk).is_open and Slot.objects.get(pk=c.eleven.pk).is_open
    slots.slot_release(order_no="L1")  # the booking gone, the slot can be blocked
    assert slots.slot_block(slot_id=c.eleven.pk, blocked=True).is_open is False


def test_updating_a_slot_counts_the_live_bookings_in_its_time(long_booked):
    c = long_booked
    later = at(c.day, 14, 30)  # off the grid: no other row starts there
    with pytest.raises(InvalidState, match="不能修改老师或时间"):
        slots.slot_update(slot_id=c.eleven.pk, start=later, end=later + dt.timedelta(hours=1))
    with pytest.raises(InvalidState, match="容量不能小于已预约人数（1）"):
        slots.slot_update(slot_id=c.eleven.pk, capacity=0)
    assert Slot.objects.filter(pk=c.eleven.pk).values_list("start", "capacity").get() == (at(c.day, 11), 1)
    assert slots.slot_update(slot_id=c.eleven.pk, is_open=False).is_open is False  # closing keeps bookings
    slots.slot_release(order_no="L1")
    moved = slots.slot_update(slot_id=c.eleven.pk, start=later, end=later + dt.timedelta(hours=1), capacity=0)
    assert (moved.start, moved.capacity) == (later, 0)
