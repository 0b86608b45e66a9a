"""Every existing booking of a slot becomes a booking of a time range (nothing is lost).

Each Booking row gets its slot's teacher, start and end (``blocked_until`` = end: the legacy
grid had no buffers); the teacher's consultation product becomes their first service (the
slot length, 60 minutes); every day off becomes an ``off`` date override. Legacy slots with
room for several customers could hold overlapping bookings: the earliest stays live, the later
ones are kept (their orders untouched) but not live, so the no-overlap rule can hold.
"""

import datetime as dt

from django.db import migrations

SLOT_LENGTH_MINUTES = 60


def forwards(apps, schema_editor):
    Booking = apps.get_model("appointments", "Booking")
    Service = apps.get_model("appointments", "Service")
    DateOverride = apps.get_model("appointments", "DateOverride")
    DayOff = apps.get_model("appointments", "DayOff")
    Teacher = apps.get_model("catalog", "Teacher")
    for teacher in Teacher.objects.exclude(product=None):
        Service.objects.get_or_create(
            product_id=teacher.product_id, defaults={"teacher_id": teacher.pk, "duration_minutes": SLOT_LENGTH_MINUTES}
        )
    for day in DayOff.objects.all():
        DateOverride.objects.get_or_create(teacher_id=day.teacher_id, date=day.date, defaults={"off": True})
    products = dict(Teacher.objects.values_list("pk", "product_id"))
    taken: dict[int, list[tuple[dt.datetime, dt.datetime]]] = {}
    for booking in Booking.objects.select_related("slot").order_by("created_at", "pk"):
        slot = booking.slot
        ranges = taken.setdefault(slot.teacher_id, [])
        live = not any(start < slot.end and slot.start < end for start, end in ranges)
        if live:
            ranges.append((slot.start, slot.end))
        Booking.objects.filter(pk=booking.pk).update(
            teacher_id=slot.teacher_id,
            product_id=products.get(slot.teacher_id),
            start=slot.start,
            end=slot.end,
            blocked_until=slot.end,
            live=live,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("appointments", "0006_booking_ranges"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
