"""Migration 0007 turns every slot booking into a booking of a time range, losing none."""

import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("appointments", "0006_booking_ranges")]


def _latest():
    """Every app's last migration: the test leaves the database as the rest of the suite needs it
    (migrations after 0009, such as the waitlist's, back too)."""
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def _migrate(targets):
    """Migrate to ``targets``; the models as the database now has them (every applied migration:
    other apps' later columns, such as catalog's, stay and must be in the models the test writes)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(list(executor.loader.applied_migrations)).apps


def test_slot_bookings_become_live_range_bookings_and_days_off_become_overrides():
    old = _migrate(BEFORE)
    try:
        Category = old.get_model("catalog", "Category")
        Product = old.get_model("catalog", "Product")
        Teacher = old.get_model("catalog", "Teacher")
        Customer = old.get_model("accounts", "Customer")
        Slot = old.get_model("appointments", "Slot")
        Booking = old.get_model("appointments", "Booking")
        DayOff = old.get_model("appointments", "DayOff")
        category = Category.objects.create(name="咨询", kind="consultation")
        product = Product.objects.create(category=category, name="咨询", kind="consultation")
        teacher = Teacher.objects.create(name="甲", product=product)
        bare = Teacher.objects.create(name="乙")
        customers = [Customer.objects.create(openid=f"o{i}") for i in range(3)]
        start = timezone.now().replace(microsecond=0) + dt.timedelta(days=2)
        one = Slot.objects.create(teacher=teacher, start=start, end=start + dt.timedelta(hours=1), booked=1)
        two = Slot.objects.create(teacher=bare, start=start, end=start + dt.timedelta(hours=1), booked=2, capacity=2)
        Booking.objects.create(slot=one, order_no="M1", customer=customers[0])
        Booking.objects.create(slot=two, order_no="M2", customer=customers[1])
        Booking.objects.create(slot=two, order_no="M3", customer=customers[2])
        DayOff.objects.create(teacher=teacher, date=dt.date(2026, 12, 25))
    finally:
        new = _migrate(_latest())

    Booking = new.get_model("appointments", "Booking")
    rows = {b.order_no: b for b in Booking.objects.all()}
    assert sorted(rows) == ["M1", "M2", "M3"]  # none lost
    m1 = rows["M1"]
    assert (m1.teacher_id, m1.product_id, m1.start, m1.end, m1.blocked_until) == (
        teacher.pk,
        product.pk,
        start,
        start + dt.timedelta(hours=1),
        start + dt.timedelta(hours=1),
    )
    assert m1.live and m1.slot_id == one.pk and m1.reschedules == 0 and m1.attendance == ""
    # The legacy double place of one slot: the earlier stays live, the other is kept, not live.
    assert (rows["M2"].live, rows["M3"].live) == (True, False)
    assert rows["M3"].teacher_id == bare.pk and rows["M3"].start == start
    Service = new.get_model("appointments", "Service")
    assert list(Service.objects.values_list("teacher_id", "product_id", "duration_minutes")) == [
        (teacher.pk, product.pk, 60)
    ]
    DateOverride = new.get_model("appointments", "DateOverride")
    assert list(DateOverride.objects.values_list("teacher_id", "date", "off")) == [
        (teacher.pk, dt.date(2026, 12, 25), True)
    ]
