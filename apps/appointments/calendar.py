"""iCalendar (RFC 5545) of bookings: one order's event, and a teacher's secret feed.

An event's UID is ``<order_no>@<the host of SITE_URL>`` (stable across reschedules); SEQUENCE is the
booking's ``reschedules`` (plus one once released); a released booking (cancelled, refunded,
expired) is ``STATUS:CANCELLED``. Times are UTC (``...Z``). The feed carries no phone numbers:
the customer's nickname at most.
"""

from __future__ import annotations

import datetime as dt
import secrets
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from icalendar import Calendar, Event

from apps.appointments.models import Booking, CalendarFeed
from starmall.errors import NotFound

FEED_DAYS_BACK = 30  # the feed lists bookings from this many days ago on


def _calendar(name: str) -> Calendar:
    cal = Calendar()
    cal.add("prodid", "-//Starmall//Bookings//ZH")
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("x-wr-calname", name)
    return cal


def _event(booking: Booking, *, summary: str, description: str = "") -> Event:
    event = Event()
    event.add("uid", f"{booking.order_no}@{urlsplit(settings.SITE_URL).hostname}")
    event.add("dtstamp", timezone.now().astimezone(dt.UTC))
    event.add("dtstart", booking.start.astimezone(dt.UTC))
    event.add("dtend", booking.end.astimezone(dt.UTC))
    event.add("sequence", booking.reschedules + (0 if booking.live else 1))
    event.add("status", "CONFIRMED" if booking.live else "CANCELLED")
    event.add("summary", summary)
    if description:
        event.add("description", description)
    return event


def order_ics(*, customer_id: int, order_no: str) -> bytes:
    """The customer's booking of ``order_no`` as a calendar of one VEVENT. NotFound: no booking
    of theirs."""
    booking = Booking.objects.select_related("teacher").filter(order_no=order_no, customer_id=customer_id).first()
    if booking is None:
        raise NotFound("订单没有预约。", order_no=order_no)
    cal = _calendar("咨询预约")
    cal.add_component(_event(booking, summary=f"咨询：{booking.teacher.name}", description=f"订单号 {order_no}"))
    return cal.to_ical()


def feed_ics(*, token: str) -> bytes:
    """The teacher's bookings from ``FEED_DAYS_BACK`` days ago on (released ones as cancelled
    events) for the feed whose token is ``token``. NotFound: no such (current) token."""
    feed = CalendarFeed.objects.select_related("teacher").filter(token=token).first() if token else None
    if feed is None:
        raise NotFound("日历订阅不存在。")
    since = timezone.now() - dt.timedelta(days=FEED_DAYS_BACK)
    bookings = Booking.objects.select_related("customer").filter(teacher_id=feed.teacher_id, start__gte=since)
    cal = _calendar(f"{feed.teacher.name} 的咨询")
    for booking in bookings.order_by("start", "pk")[:2000]:
        nickname = (booking.customer.nickname or "顾客")[:20]
        cal.add_component(_event(booking, summary=f"咨询：{nickname}", description=f"订单号 {booking.order_no}"))
    return cal.to_ical()


def feed_url(token: str) -> str:
    """The public address of the feed with ``token`` (what a calendar app subscribes to)."""
    return f"{settings.SITE_URL}/api/v1/calendars/{token}.ics"


def feed_token(*, teacher_id: int) -> str:
    """The teacher's feed token (made the first time it is asked for)."""
    feed = CalendarFeed.objects.filter(teacher_id=teacher_id).first()
    if feed is not None:
        return feed.token
    try:
        with transaction.atomic():
            return CalendarFeed.objects.create(teacher_id=teacher_id, token=secrets.token_urlsafe(24)).token
    except IntegrityError:  # made by a racing first ask
        return CalendarFeed.objects.get(teacher_id=teacher_id).token


@transaction.atomic
def feed_token_replace(*, teacher_id: int) -> str:
    """A new random token for the teacher's feed; the old URL answers 404 from now on."""
    token = secrets.token_urlsafe(24)
    if not CalendarFeed.objects.filter(teacher_id=teacher_id).update(token=token, updated_at=timezone.now()):
        CalendarFeed.objects.create(teacher_id=teacher_id, token=token)
    return token
