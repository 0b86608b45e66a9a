"""Consultations of a seeding run (``volume_seed``): the run's own teachers, each with one
60-minute service and the legacy six starts a day, and each consultation order's booking.

Every booking takes its own cell of the run's teacher x Shanghai day x start-hour grid
(:data:`HOURS`, two hours apart: a 60-minute service plus :data:`BUFFER_MINUTES` on either side
never meets the next cell): none of the run's bookings overlap, and its teachers are new, so none
meets another run's or a real one (the PostgreSQL exclusion constraint holds by construction).
The grid covers the last :data:`PAST_DAYS` days and the next :data:`AHEAD_DAYS`; its cells are
drawn at random, and a cell's time decides what the order can have reached (:func:`consultation_timeline`).
"""

from __future__ import annotations

import datetime as dt
import math

from django.db import transaction
from django.utils import timezone

from apps.appointments.models import Attendance, Service, TeacherRules
from apps.catalog.models import Category, Kind, Product, Sku, Teacher
from apps.orders.models import OrderStatus

HOURS = (9, 11, 13, 15, 17, 19)  # Shanghai starts: the legacy grid
DURATION_MINUTES = 60
BUFFER_MINUTES = 15
PAST_DAYS = 350  # booked at most 10 days ahead: every order stays within the last 365 days
AHEAD_DAYS = 30  # a teacher's default horizon_days
SHARE = 0.05  # of the orders that are not unpaid
CELLS_TAKEN = 0.5  # about half of each teacher's cells are booked
NO_SHOW = 0.06  # of the consultations held
MINUTE = dt.timedelta(minutes=1)


def consultation_teachers(run, orders: int) -> None:
    """The run's teachers (enough for about :data:`CELLS_TAKEN` of their cells) with their
    service product, SKU, rules and Service; ``run.cells`` their shuffled grid."""
    cells_each = (PAST_DAYS + AHEAD_DAYS) * len(HOURS)
    count = max(2, math.ceil(orders * SHARE / (cells_each * CELLS_TAKEN)))
    with transaction.atomic():
        category = Category.objects.create(name=f"压测咨询{run.number}", kind=Kind.CONSULTATION)
        for i in range(count):
            product = Product.objects.create(
                category=category, name=f"压测咨询{run.number}-{i}", kind=Kind.CONSULTATION
            )
            sku = Sku.objects.create(product=product, price_fen=run.rng.choice([9900, 19900, 29900]), stock=10**6)
            teacher = Teacher.objects.create(name=f"压测老师{run.number}-{i}", title="咨询师", product=product)
            TeacherRules.objects.create(teacher=teacher, buffer_minutes=BUFFER_MINUTES, step_minutes=120)
            Service.objects.create(teacher=teacher, product=product, duration_minutes=DURATION_MINUTES)
            sku.product = product
            run.teachers.append((teacher.pk, sku))
    today = timezone.localtime(run.now).date()
    run.cells = [
        (t, today + dt.timedelta(days=d), hour)
        for t in range(count)
        for d in range(-PAST_DAYS, AHEAD_DAYS + 1)
        for hour in HOURS
    ]
    run.rng.shuffle(run.cells)


def consultation_timeline(run, start: dt.datetime) -> tuple[str, dict, dict]:
    """(status, order times, booking fields) of a consultation starting at ``start``: booked
    3 h to 10 days ahead (a start further ahead: within the last three days); cancelled unpaid
    (10 %, the hold released at the deadline); refunded or refunding (up to 5 %: asked a day
    after paying, at least a day before the start, so in full; released then); otherwise paid,
    and completed once ended (by the job: the last hour's ended ones are left to it), attended
    or (:data:`NO_SHOW`) not."""
    rng = run.rng
    end = start + DURATION_MINUTES * MINUTE
    created = start - dt.timedelta(hours=rng.uniform(3, 240))
    if created > run.now - 2 * 60 * MINUTE:  # booked further ahead: some time in the last three days
        created = run.now - dt.timedelta(hours=rng.uniform(2, 72))
    times = {"created_at": created, "pay_deadline": created + 30 * MINUTE}
    booking = {"start": start, "end": end, "blocked_until": end + BUFFER_MINUTES * MINUTE, "created_at": created}
    draw = rng.random()
    if draw < 0.10:
        times["cancelled_at"] = times["pay_deadline"]
        booking.update(live=False, hold_until=times["pay_deadline"], released_at=times["cancelled_at"])
        return OrderStatus.CANCELLED, times, booking
    times["paid_at"] = created + dt.timedelta(seconds=rng.uniform(30, 900))
    asked = times["paid_at"] + dt.timedelta(days=1)
    if draw < 0.15 and asked <= start - dt.timedelta(days=1) and asked < run.now - 60 * MINUTE:
        booking.update(live=False, released_at=asked)
        return (OrderStatus.REFUNDED if draw < 0.14 else OrderStatus.REFUNDING), times, booking
    if end < run.now - 60 * MINUTE:
        times["completed_at"] = end + dt.timedelta(seconds=rng.uniform(10, 600))
        no_show = rng.random() < NO_SHOW
        booking["attendance"] = Attendance.NO_SHOW if no_show else Attendance.ATTENDED
        return OrderStatus.COMPLETED, times, booking
    return OrderStatus.PAID, times, booking
