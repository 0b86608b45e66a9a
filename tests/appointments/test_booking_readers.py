"""What follows a booking reads the booking (its ``start``/``end``/teacher), not the legacy slot
grid: reminders, the chat session and the consultations list, completion, auto-approved refunds,
and the teacher's ``daily_max`` at the write."""

import datetime as dt

import pytest
from django.db import transaction
from django.utils import timezone

from apps.appointments import bookings
from apps.appointments.exceptions import SlotUnavailable
from apps.appointments.models import Booking, Slot, TeacherRules
from apps.chat import reminders
from apps.chat.models import ChatSession, ConsultationReminder
from apps.orders.followups import followup_execute
from apps.orders.models import FollowUp, Order
from apps.orders.services import orders_complete_held_consultations

pytestmark = pytest.mark.django_db


def book(api, sku, start):
    body = {"items": [{"sku_id": sku.pk, "quantity": 1}], "start": start.isoformat()}
    confirmed = api.post("/api/v1/orders/confirm", body, format="json")
    assert confirmed.status_code == 200, confirmed.json()
    created = api.post("/api/v1/orders", {"order_key": confirmed.json()["order_key"]}, format="json")
    assert created.status_code == 201, created.json()
    return created.json()["order_no"]


@pytest.fixture
def paid(make_customer, make_api, hours_teacher, django_capture_on_commit_callbacks):
    """A 60-minute consultation booked by start (Monday 14:00-15:00) and paid from the balance,
    its chat_open follow-up run; ``.slot_rows`` how many legacy slot rows existed before."""
    h = hours_teacher
    h.customer = make_customer(balance_fen=100000)
    h.api = make_api(h.customer)
    h.slot_rows = Slot.objects.count()
    h.order_no = book(h.api, h.long_sku, h.at(14))
    with django_capture_on_commit_callbacks(execute=False):
        answer = h.api.post(f"/api/v1/orders/{h.order_no}/pay", {"method": "balance"}, format="json")
    assert answer.status_code == 200, answer.json()
    opener = FollowUp.objects.get(order__order_no=h.order_no, kind=FollowUp.Kind.CHAT_OPEN)
    assert followup_execute(opener.pk) == FollowUp.Status.DONE
    return h


def test_reminders_go_once_each_before_the_bookings_start_and_follow_a_move(paid, wechat, settings):
    h = paid
    wechat.state.upsert_user(h.customer.openid)
    start = h.at(14)
    assert reminders.reminders_schedule(now=start - dt.timedelta(hours=24, seconds=1))["created"] == 0
    assert reminders.reminders_schedule(now=start - dt.timedelta(hours=24))["created"] == 1
    assert reminders.reminders_schedule(now=start - dt.timedelta(hours=23))["created"] == 0  # written once
    row = ConsultationReminder.objects.get()
    assert (row.hours, row.slot_start) == (24, start)
    assert reminders.reminder_send(reminder_id=row.pk, now=start - dt.timedelta(hours=23)) == "sent"
    assert reminders.reminder_send(reminder_id=row.pk, now=start - dt.timedelta(hours=23)) == "sent"
    sent = [m for m in wechat.state.messages if m.template_id == settings.WECHAT_SUBSCRIBE_TEMPLATE_REMINDER]
    assert len(sent) == 1 and sent[0].touser == h.customer.openid
    assert h.teacher.name in str(sent[0].data) and timezone.localtime(start).strftime("%Y-%m-%d %H:%M") in str(
        sent[0].data
    )
    # the 1-hour reminder is written, then the booking moves to 16:00: it is skipped, 16:00 gets its own
    assert reminders.reminders_schedule(now=start - dt.timedelta(minutes=59))["created"] == 1
    pending = ConsultationReminder.objects.get(hours=1)
    moved = h.api.post(f"/api/v1/orders/{h.order_no}/reschedule", {"start": h.at(16).isoformat()}, format="json")
    assert moved.status_code == 200, moved.json()
    assert reminders.reminder_send(reminder_id=pending.pk, now=start - dt.timedelta(minutes=58)) == "skipped"
    assert reminders.reminders_schedule(now=h.at(15))["created"] == 1
    assert ConsultationReminder.objects.filter(slot_start=h.at(16), hours=1).count() == 1


def test_the_chat_session_is_the_bookings_teachers_and_the_list_reads_the_booking(paid):
    h = paid
    session = ChatSession.objects.get(order__order_no=h.order_no)
    assert (session.teacher_id, session.customer_id) == (h.teacher.pk, h.customer.pk)
    upcoming = h.api.get("/api/v1/consultations", {"status": "upcoming"}).json()["results"]
    assert [(c["order_no"], c["chat_session_id"]) for c in upcoming] == [(h.order_no, session.pk)]
    assert upcoming[0]["teacher"] == {"id": h.teacher.pk, "name": h.teacher.name, "title": h.teacher.title}
    assert (upcoming[0]["slot"]["start"], upcoming[0]["slot"]["end"]) == (h.at(14).isoformat(), h.at(15).isoformat())
    order = h.api.get(f"/api/v1/orders/{h.order_no}").json()
    assert order["slot"]["start"] == order["booking"]["start"] == h.at(14).isoformat()


def test_completion_at_the_bookings_end_counts_unmarked_as_attended(paid):
    h = paid
    assert orders_complete_held_consultations(now=h.at(14, 59)) == 0
    assert Order.objects.get(order_no=h.order_no).status == "paid"
    assert orders_complete_held_consultations(now=h.at(15)) == 1
    assert orders_complete_held_consultations(now=h.at(15)) == 0  # once
    assert Order.objects.get(order_no=h.order_no).status == "completed"
    assert Booking.objects.get(order_no=h.order_no).attendance == "attended"
    past = h.api.get("/api/v1/consultations", {"status": "past"}).json()["results"]
    assert [c["order_no"] for c in past] == [h.order_no]


def test_a_refund_far_enough_from_the_bookings_start_is_approved_at_once(paid, settings):
    h = paid
    settings.REFUND_AUTO_APPROVE_HOURS = 1
    settings.CANCEL_FULL_REFUND_HOURS = 1
    answer = h.api.post(f"/api/v1/orders/{h.order_no}/refund", {"reason": "有事"}, format="json")
    assert answer.status_code == 202, answer.json()
    assert (answer.json()["status"], answer.json()["amount_fen"]) == ("approved", 6000)
    assert not Booking.objects.get(order_no=h.order_no).live


def test_daily_max_is_kept_by_the_write_for_creates_and_moves(make_customer, make_api, hours_teacher):
    h = hours_teacher
    TeacherRules.objects.filter(teacher=h.teacher).update(daily_max=1)
    customer = make_customer()
    tuesday = h.monday + dt.timedelta(days=1)
    h.book(h.long, h.at(9), h.at(10), "D1", customer)
    with pytest.raises(SlotUnavailable), transaction.atomic():  # not overlapping, but the day is full
        h.book(h.long, h.at(14), h.at(15), "D2", customer)
    other = h.book(h.long, h.at(9, day=tuesday), h.at(10, day=tuesday), "D3", customer)
    with pytest.raises(SlotUnavailable), transaction.atomic():  # moving into the full Monday
        bookings.booking_move(order_no="D3", start=h.at(16), end=h.at(17))
    moved = bookings.booking_move(order_no="D1", start=h.at(16), end=h.at(17))  # within its own day: fine
    assert (moved.start, Booking.objects.get(pk=other.pk).start) == (h.at(16), h.at(9, day=tuesday))
    assert sorted(Booking.objects.filter(live=True).values_list("order_no", flat=True)) == ["D1", "D3"]
    bookings.booking_release(order_no="D1")  # a released booking frees the day
    assert bookings.booking_move(order_no="D3", start=h.at(11), end=h.at(12)).start == h.at(11)
