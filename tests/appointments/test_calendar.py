"""Bookings as iCalendar (API.md "Booking"): an order's one VEVENT (stable UID, SEQUENCE up with
reschedules, CANCELLED once released) and the teacher's secret feed (no phone numbers; a new
token makes the old URL 404). Every answer is parsed back with icalendar."""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from icalendar import Calendar

from apps.appointments import bookings

pytestmark = pytest.mark.django_db


def _events(response):
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/calendar")
    return [c for c in Calendar.from_ical(response.content).walk() if c.name == "VEVENT"]


def test_an_orders_event_keeps_its_uid_rises_its_sequence_and_is_cancelled(api, customer, make_api, waitlist_teacher):
    h = waitlist_teacher
    booking = h.book(customer)
    url = f"/api/v1/orders/{booking.order_no}/calendar.ics"
    uid = f"{booking.order_no}@{urlsplit(settings.SITE_URL).hostname}"
    [event] = _events(api.get(url))
    assert (str(event["uid"]), event["status"], int(event["sequence"])) == (uid, "CONFIRMED", 0)
    assert event.decoded("dtstart") == h.start(h.day) and event.decoded("dtend") == h.start(h.day) + dt.timedelta(
        hours=1
    )
    later = h.start(h.day + dt.timedelta(days=1))
    bookings.booking_move(order_no=booking.order_no, start=later, end=later + dt.timedelta(hours=1))
    [moved] = _events(api.get(url))
    assert (str(moved["uid"]), int(moved["sequence"]), moved.decoded("dtstart")) == (uid, 1, later)
    bookings.booking_release(order_no=booking.order_no)
    [cancelled] = _events(api.get(url))
    assert (str(cancelled["uid"]), cancelled["status"], int(cancelled["sequence"])) == (uid, "CANCELLED", 2)


def test_an_orders_event_is_only_its_customers(make_api, make_customer, waitlist_teacher, customer):
    booking = waitlist_teacher.book(customer)
    response = make_api(make_customer()).get(f"/api/v1/orders/{booking.order_no}/calendar.ics")
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert make_api().get(f"/api/v1/orders/{booking.order_no}/calendar.ics").status_code == 401
    assert (
        make_api(customer).get("/api/v1/orders/SM404/calendar.ics", HTTP_ACCEPT="text/calendar").json()["code"]
        == "not_found"
    )


def test_the_teachers_feed_lists_their_bookings_and_a_new_token_retires_the_old_url(
    make_api, make_customer, waitlist_teacher
):
    h = waitlist_teacher
    teacher_person = make_customer()
    h.teacher.customer = teacher_person
    h.teacher.save(update_fields=["customer"])
    buyer = make_customer()
    buyer.phone = "13800138000"
    buyer.save(update_fields=["phone"])
    made = [h.book(buyer, h.day + dt.timedelta(days=i)) for i in range(3)]
    bookings.booking_release(order_no=made[2].order_no)
    teacher_api = make_api(teacher_person)
    schedule = teacher_api.get("/api/v1/teacher/schedule").json()
    assert teacher_api.get("/api/v1/teacher/schedule").json()["ics_url"] == schedule["ics_url"]  # stable
    old_path = urlsplit(schedule["ics_url"]).path
    feed = make_api().get(old_path)  # public: no token needed
    events = _events(feed)
    assert len(events) == 3
    assert [str(e["uid"]).split("@")[0] for e in events] == [b.order_no for b in made]
    assert [e["status"] for e in events] == ["CONFIRMED", "CONFIRMED", "CANCELLED"]
    assert "13800138000" not in feed.content.decode() and buyer.nickname in str(events[0]["summary"])

    replaced = teacher_api.post("/api/v1/teacher/ics-token")
    assert replaced.status_code == 200
    new_path = urlsplit(replaced.json()["ics_url"]).path
    assert new_path != old_path
    assert make_api().get(old_path).status_code == 404
    assert len(_events(make_api().get(new_path))) == 3
    assert teacher_api.get("/api/v1/teacher/schedule").json()["ics_url"] == replaced.json()["ics_url"]


def test_only_a_teacher_replaces_a_feed_token(api):
    response = api.post("/api/v1/teacher/ics-token")
    assert response.status_code == 403 and response.json()["code"] == "forbidden"
