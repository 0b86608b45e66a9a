"""The waitlist: customers waiting for a start on a full date of a teacher's service.

:func:`waitlist_join` accepts only a date that lists no start, at most ``WAITLIST_MAX_WAITING``
waiting entries per customer. Beat's :func:`waitlist_sweep` (every ``BEAT_SWEEP_SECONDS``) expires
past dates, marks ``booked`` the entries whose customer holds a live booking of that teacher,
service and date, and makes the ``waiting`` entries of a date that lists a start again (a cancel,
refund, expired unpaid booking, reschedule away, new hours) ``notified`` by one conditional UPDATE;
their ``waitlist_open`` messages go after commit (:func:`waitlist_message_send`, leased, retried by
the next sweep until ``MAX_ATTEMPTS``). The first to book wins: a notification promises nothing.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from apps.accounts.models import Customer
from apps.appointments import availability
from apps.appointments.bookings import live_q
from apps.appointments.models import Booking, WaitlistEntry
from apps.appointments.selectors import day_bounds
from apps.catalog.models import Teacher
from starmall import dispatch
from starmall.errors import InvalidInput, InvalidState, LimitExceeded, NotFound

logger = logging.getLogger(__name__)

Status = WaitlistEntry.Status
Message = WaitlistEntry.Message


def listed_starts(*, teacher_id: int, product_id: int, date: dt.date, now: dt.datetime | None = None) -> list:
    """The starts ``date`` lists for the teacher's service (``apps.appointments.availability``,
    the availability API's rule); [] for an unknown teacher or a product not theirs."""
    teacher = Teacher.objects.filter(pk=teacher_id).first()
    if teacher is None:
        return []
    try:
        service = availability.service_for(teacher=teacher, product_id=product_id)
    except InvalidInput:
        return []
    return availability.availability(teacher=teacher, service=service, start=date, end=date, now=now)[0][1]


def waitlist_join(*, customer_id: int, teacher_id: int, product_id: int, date: dt.date) -> tuple[WaitlistEntry, bool]:
    """The customer's live entry for the teacher's service on ``date``, made if missing;
    ``(entry, created)``. NotFound: no such teacher; InvalidInput: the product is not a service
    of theirs. InvalidState:
    the date is past or still lists a start. LimitExceeded: the customer already waits for
    ``WAITLIST_MAX_WAITING`` dates."""
    teacher = Teacher.objects.filter(pk=teacher_id).first()
    if teacher is None:
        raise NotFound("老师不存在。", teacher_id=teacher_id)
    availability.service_for(teacher=teacher, product_id=product_id)  # InvalidInput when not theirs
    if date < timezone.localdate():
        raise InvalidState("该日期已过。", date=date.isoformat())
    if listed_starts(teacher_id=teacher_id, product_id=product_id, date=date):
        raise InvalidState("该日期仍有可约时间，请直接预约。", date=date.isoformat())
    key = dict(customer_id=customer_id, teacher_id=teacher_id, product_id=product_id, date=date)
    with transaction.atomic():
        # The cap holds under races: this lock on PostgreSQL, the IMMEDIATE transaction on SQLite.
        Customer.objects.select_for_update().filter(pk=customer_id).first()  # joins of one customer queue
        existing = WaitlistEntry.objects.filter(status__in=WaitlistEntry.LIVE, **key).first()
        if existing is not None:
            return existing, False
        waiting = WaitlistEntry.objects.filter(customer_id=customer_id, status=Status.WAITING).count()
        if waiting >= settings.WAITLIST_MAX_WAITING:
            raise LimitExceeded(f"最多同时候补 {settings.WAITLIST_MAX_WAITING} 个日期。")
        try:
            with transaction.atomic():
                return WaitlistEntry.objects.create(**key), True
        except IntegrityError:  # the same join raced this one (another customer lock path)
            pass
    return WaitlistEntry.objects.get(status__in=WaitlistEntry.LIVE, **key), False


def waitlist_list(*, customer_id: int, status: str | None = None) -> QuerySet[WaitlistEntry]:
    """The customer's entries, newest first (left ones not listed); ``status`` filters."""
    entries = WaitlistEntry.objects.filter(customer_id=customer_id).exclude(status=Status.CANCELLED)
    if status:
        entries = entries.filter(status=status)
    return entries.order_by("-created_at", "-id")


def waitlist_leave(*, customer_id: int, entry_id: int) -> None:
    """The customer leaves the waitlist: a live entry becomes ``cancelled`` (conditional UPDATE);
    leaving again, or an entry already booked or expired, changes nothing. NotFound: not theirs."""
    entries = WaitlistEntry.objects.filter(pk=entry_id, customer_id=customer_id)
    if not entries.exists():
        raise NotFound("候补不存在。", id=entry_id)
    entries.filter(status__in=WaitlistEntry.LIVE).update(status=Status.CANCELLED, updated_at=timezone.now())


def waitlist_sweep(*, now: dt.datetime | None = None) -> dict:
    """Beat: expire past dates, mark booked entries, notify the dates that list a start again,
    push the messages still pending. Returns counts; safe to run twice at once."""
    now = now or timezone.now()
    today = timezone.localdate(now)
    expired = WaitlistEntry.objects.filter(status__in=WaitlistEntry.LIVE, date__lt=today).update(
        status=Status.EXPIRED, updated_at=now
    )
    booked = notified = 0
    groups = (
        WaitlistEntry.objects.filter(status__in=WaitlistEntry.LIVE)
        .values_list("teacher_id", "product_id", "date")
        .distinct()
    )
    for teacher_id, product_id, date in list(groups):
        booked += _mark_booked(teacher_id=teacher_id, product_id=product_id, date=date, now=now)
        notified += _notify_date(teacher_id=teacher_id, product_id=product_id, date=date, now=now)
    free = Q(locked_until__isnull=True) | Q(locked_until__lt=now)
    pending = list(WaitlistEntry.objects.filter(free, message=Message.PENDING).order_by("created_at", "pk"))
    for entry in pending:
        _push(entry.pk, sweep=True)
    return {"expired": expired, "booked": booked, "notified": notified, "pushed": len(pending)}


def _mark_booked(*, teacher_id: int, product_id: int, date: dt.date, now: dt.datetime) -> int:
    """Live entries of the date whose customer holds a live booking of it -> ``booked``."""
    lo, hi = day_bounds(date, date)
    customers = Booking.objects.filter(
        live_q(now), teacher_id=teacher_id, product_id=product_id, start__gte=lo, start__lt=hi
    ).values("customer_id")
    return WaitlistEntry.objects.filter(
        teacher_id=teacher_id,
        product_id=product_id,
        date=date,
        status__in=WaitlistEntry.LIVE,
        customer_id__in=customers,
    ).update(status=Status.BOOKED, updated_at=now)


def _notify_date(*, teacher_id: int, product_id: int, date: dt.date, now: dt.datetime) -> int:
    """When the date lists a start, its waiting entries -> ``notified`` (message pending), the
    sends pushed after commit, oldest first. Returns the entries notified by this call."""
    waiting = WaitlistEntry.objects.filter(
        teacher_id=teacher_id, product_id=product_id, date=date, status=Status.WAITING
    )
    if date < timezone.localdate(now) or not waiting.exists():
        return 0
    if not listed_starts(teacher_id=teacher_id, product_id=product_id, date=date, now=now):
        return 0
    with transaction.atomic():
        ids = list(waiting.order_by("created_at", "pk").values_list("pk", flat=True))
        changed = WaitlistEntry.objects.filter(pk__in=ids, status=Status.WAITING).update(
            status=Status.NOTIFIED, message=Message.PENDING, notified_at=now, updated_at=now
        )
        for pk in ids:
            transaction.on_commit(lambda pk=pk: _push(pk))
    return changed


def _push(entry_id: int, *, sweep: bool = False) -> None:
    from apps.appointments.tasks import waitlist_message_send

    dispatch.push(waitlist_message_send, entry_id, sweep=sweep)


def waitlist_message_send(*, entry_id: int, now: dt.datetime | None = None) -> str:
    """Send one entry's ``waitlist_open`` message; returns its ``message`` state afterwards.
    Claimed first (pending and not leased -> leased, attempts + 1): two deliveries send once."""
    from apps.accounts import subscriptions

    now = now or timezone.now()
    free = Q(locked_until__isnull=True) | Q(locked_until__lt=now)
    claimed = WaitlistEntry.objects.filter(free, pk=entry_id, message=Message.PENDING).update(
        locked_until=now + dt.timedelta(seconds=WaitlistEntry.LEASE_SECONDS), attempts=F("attempts") + 1
    )
    entry = WaitlistEntry.objects.select_related("customer", "teacher").filter(pk=entry_id).first()
    if entry is None or claimed != 1:
        return entry.message if entry is not None else "missing"
    try:
        outcome = subscriptions.subscribe_send(
            customer=entry.customer,
            kind=subscriptions.Kind.WAITLIST_OPEN,
            page=f"pages/teacher/detail?id={entry.teacher_id}&date={entry.date:%Y-%m-%d}",
            values={
                "teacher": entry.teacher.name[:20],
                "date": f"{entry.date:%Y-%m-%d}",
                "note": "候补日期有空档，先约先得",
            },
        )
    except Exception as exc:  # noqa: BLE001 - recorded; the next sweep retries until MAX_ATTEMPTS
        state = Message.FAILED if entry.attempts >= WaitlistEntry.MAX_ATTEMPTS else Message.PENDING
        logger.warning("waitlist message %s failed: %s", entry_id, exc)
        return _finish(entry_id, state, f"{type(exc).__name__}: {exc}"[:300])
    return _finish(entry_id, Message.SENT if outcome == subscriptions.SENT else Message.SKIPPED, "")


def _finish(entry_id: int, state: str, error: str) -> str:
    WaitlistEntry.objects.filter(pk=entry_id, message=Message.PENDING).update(
        message=state, locked_until=None, last_error=error
    )
    return state
