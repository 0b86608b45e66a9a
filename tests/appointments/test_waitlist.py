"""The waitlist (API.md "Booking"): join only a full date, the same join answers the same entry,
at most 3 waiting; the sweep notifies each waiting entry once when a start is listed again,
oldest first, marks booked entries and expires past dates."""

from __future__ import annotations

import datetime as dt

import pytest
from django.conf import settings

from apps.appointments import bookings, waitlist
from apps.appointments.models import DateOverride, WaitlistEntry

pytestmark = pytest.mark.django_db

Status, Message = WaitlistEntry.Status, WaitlistEntry.Message


def _join(api, h, day=None, product_id=None):
    body = {"product_id": product_id or h.product.pk, "date": (day or h.day).isoformat()}
    return api.post(f"/api/v1/teachers/{h.teacher.pk}/waitlist", body, format="json")


def test_a_date_that_lists_starts_cannot_be_waited_for(api, waitlist_teacher):
    h = waitlist_teacher
    assert [s.hour for s in waitlist.listed_starts(teacher_id=h.teacher.pk, product_id=h.product.pk, date=h.day)] == [9]
    response = _join(api, h)
    assert response.status_code == 409 and response.json()["code"] == "invalid_state"
    assert WaitlistEntry.objects.count() == 0


def test_join_a_full_date_then_again_answers_the_same_entry(api, customer, make_customer, waitlist_teacher):
    h = waitlist_teacher
    h.book(make_customer())
    assert waitlist.listed_starts(teacher_id=h.teacher.pk, product_id=h.product.pk, date=h.day) == []
    first = _join(api, h)
    assert first.status_code == 201
    body = first.json()
    assert set(body) == {"id", "product_id", "date", "status", "created_at"}
    assert (body["product_id"], body["date"], body["status"]) == (h.product.pk, h.day.isoformat(), "waiting")
    again = _join(api, h)
    assert again.status_code == 200 and again.json() == body
    assert WaitlistEntry.objects.filter(customer=customer).count() == 1


def test_a_product_that_is_not_the_teachers_service_is_refused(api, waitlist_teacher, make_sku, make_customer):
    h = waitlist_teacher
    h.book(make_customer())
    response = _join(api, h, product_id=make_sku().product_id)
    assert response.status_code == 400 and response.json()["code"] == "invalid"
    assert (
        api.post(
            "/api/v1/teachers/999999/waitlist", {"product_id": h.product.pk, "date": h.day.isoformat()}, format="json"
        ).json()["code"]
        == "not_found"
    )
    assert _join(api, h, day=h.day - dt.timedelta(days=3)).json()["code"] == "invalid_state"  # past


def test_a_fourth_waiting_entry_is_limit_exceeded(api, make_customer, waitlist_teacher):
    h = waitlist_teacher
    days = [h.day + dt.timedelta(days=i) for i in range(4)]
    other = make_customer()
    for day in days:
        h.book(other, day)
    assert [_join(api, h, day).status_code for day in days[:3]] == [201, 201, 201]
    refused = _join(api, h, days[3])
    assert refused.status_code == 409 and refused.json()["code"] == "limit_exceeded"
    assert WaitlistEntry.objects.filter(status=Status.WAITING).count() == settings.WAITLIST_MAX_WAITING
    assert _join(api, h, days[0]).status_code == 200  # an entry held is still answered


def test_list_filters_by_status_and_delete_leaves(api, make_api, customer, make_customer, waitlist_teacher):
    h = waitlist_teacher
    other = make_customer()
    h.book(other)
    h.book(other, h.day + dt.timedelta(days=1))
    kept = _join(api, h).json()
    left = _join(api, h, h.day + dt.timedelta(days=1)).json()
    WaitlistEntry.objects.filter(pk=kept["id"]).update(status=Status.NOTIFIED)
    listed = api.get("/api/v1/me/waitlist").json()
    assert [e["id"] for e in listed["results"]] == [left["id"], kept["id"]]
    assert [e["id"] for e in api.get("/api/v1/me/waitlist", {"status": "notified"}).json()["results"]] == [kept["id"]]
    assert api.get("/api/v1/me/waitlist", {"status": "nonsense"}).status_code == 400
    assert make_api(other).delete(f"/api/v1/me/waitlist/{left['id']}").status_code == 404  # not theirs
    assert api.delete(f"/api/v1/me/waitlist/{left['id']}").status_code == 204
    assert api.delete(f"/api/v1/me/waitlist/{left['id']}").status_code == 204
    assert [e["id"] for e in api.get("/api/v1/me/waitlist").json()["results"]] == [kept["id"]]
    assert WaitlistEntry.objects.get(pk=left["id"]).status == Status.CANCELLED
    assert _join(api, h, h.day + dt.timedelta(days=1)).status_code == 201  # a new entry after leaving


def test_a_freed_start_notifies_each_waiting_entry_once_oldest_first(
    make_api, make_customer, waitlist_teacher, wechat, django_capture_on_commit_callbacks
):
    h = waitlist_teacher
    holder = make_customer()
    booking = h.book(holder)
    waiting = [make_customer() for _ in range(3)]
    for person in waiting:
        wechat.state.upsert_user(person.openid)
        assert _join(make_api(person), h).status_code == 201
    assert waitlist.waitlist_sweep()["notified"] == 0  # still full: nobody told
    assert set(WaitlistEntry.objects.values_list("status", flat=True)) == {Status.WAITING}

    bookings.booking_release(order_no=booking.order_no)  # a cancel
    with django_capture_on_commit_callbacks(execute=False) as pushes:
        counts = waitlist.waitlist_sweep()
    assert counts["notified"] == 3 and len(pushes) == 3
    entries = list(WaitlistEntry.objects.order_by("created_at", "pk"))
    assert [(e.status, e.message) for e in entries] == [(Status.NOTIFIED, Message.PENDING)] * 3
    for entry in entries:  # the pushed sends, oldest first
        assert waitlist.waitlist_message_send(entry_id=entry.pk) == Message.SENT
        assert waitlist.waitlist_message_send(entry_id=entry.pk) == Message.SENT  # not sent twice
    sent = [m for m in wechat.state.messages if m.template_id == settings.WECHAT_SUBSCRIBE_TEMPLATE_WAITLIST]
    assert [m.touser for m in sent] == [p.openid for p in waiting]
    assert sent[0].data["date2"]["value"] == h.day.isoformat()
    assert waitlist.waitlist_sweep()["notified"] == 0  # once only
    assert len(wechat.state.messages) == len(sent)


def test_new_hours_on_a_waited_date_notify(
    make_api, make_customer, waitlist_teacher, django_capture_on_commit_callbacks
):
    h = waitlist_teacher
    DateOverride.objects.create(teacher=h.teacher, date=h.day, off=True)
    person = make_customer()
    assert _join(make_api(person), h).status_code == 201
    assert waitlist.waitlist_sweep()["notified"] == 0
    DateOverride.objects.filter(teacher=h.teacher, date=h.day).update(off=False, windows=[["15:00", "16:00"]])
    with django_capture_on_commit_callbacks(execute=False):
        assert waitlist.waitlist_sweep()["notified"] == 1
    assert WaitlistEntry.objects.get().status == Status.NOTIFIED


def test_the_first_to_book_is_booked_and_past_dates_expire(make_api, make_customer, waitlist_teacher):
    h = waitlist_teacher
    booking = h.book(make_customer())
    first, second = make_customer(), make_customer()
    for person in (first, second):
        assert _join(make_api(person), h).status_code == 201
    bookings.booking_release(order_no=booking.order_no)
    h.book(first)  # the first to book wins; the date is full again
    counts = waitlist.waitlist_sweep()
    assert (counts["booked"], counts["notified"]) == (1, 0)
    assert WaitlistEntry.objects.get(customer=first).status == Status.BOOKED
    assert WaitlistEntry.objects.get(customer=second).status == Status.WAITING
    WaitlistEntry.objects.filter(customer=second).update(date=h.day - dt.timedelta(days=3))
    assert waitlist.waitlist_sweep()["expired"] == 1
    assert WaitlistEntry.objects.get(customer=second).status == Status.EXPIRED


def test_a_failing_send_stays_pending_for_the_next_sweep(make_customer, make_api, waitlist_teacher, monkeypatch):
    from apps.accounts import subscriptions

    h = waitlist_teacher
    person = make_customer()
    h.book(make_customer())
    entry_id = _join(make_api(person), h).json()["id"]
    WaitlistEntry.objects.filter(pk=entry_id).update(status=Status.NOTIFIED, message=Message.PENDING)

    def down(**kwargs):
        raise ConnectionError("WeChat down")

    monkeypatch.setattr(subscriptions, "subscribe_send", down)
    assert waitlist.waitlist_message_send(entry_id=entry_id) == Message.PENDING
    entry = WaitlistEntry.objects.get(pk=entry_id)
    assert (entry.attempts, entry.locked_until, "WeChat down" in entry.last_error) == (1, None, True)
    WaitlistEntry.objects.filter(pk=entry_id).update(attempts=WaitlistEntry.MAX_ATTEMPTS - 1)
    assert waitlist.waitlist_message_send(entry_id=entry_id) == Message.FAILED
