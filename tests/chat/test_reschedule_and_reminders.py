"""Moving a booking (API, admin, the status log) and the reminders that follow the slot's time."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Permission
from django.db import transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.appointments import slots
from apps.appointments.models import Booking, Slot
from apps.catalog.models import Teacher
from apps.chat import reminders
from apps.chat.models import ConsultationReminder
from apps.orders.models import Order, OrderEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def far(make_customer, pay_consultation, consultation, teacher_customer):
    """A paid consultation booked on the last generated slot (days away); ``.target`` a free one."""

    class Far:
        pass

    f = Far()
    f.customer = make_customer(balance_fen=100000)
    f.old, f.target = consultation.slots[-1], consultation.slots[-2]
    f.order, f.session = pay_consultation(f.customer, slot=f.old)
    return f


def _move(api, order_no, slot_id):
    return api.post(f"/api/v1/orders/{order_no}/reschedule", {"slot_id": slot_id}, format="json")


def test_reschedule_moves_the_place_in_one_go(far, make_api):
    response = _move(make_api(far.customer), far.order["order_no"], far.target.pk)
    assert response.status_code == 200, response.json()
    assert response.json()["slot"]["id"] == far.target.pk and response.json()["status"] == "paid"
    assert Booking.objects.filter(slot_id=far.old.pk, live=True).count() == 0
    assert Booking.objects.filter(slot_id=far.target.pk, live=True).count() == 1
    assert Booking.objects.get(order_no=far.order["order_no"]).slot_id == far.target.pk
    assert Order.objects.get(order_no=far.order["order_no"]).slot_id == far.target.pk
    notes = list(OrderEvent.objects.filter(order__order_no=far.order["order_no"]).values_list("note", "actor"))
    assert notes[-1][1] == "customer" and notes[-1][0].startswith(f"改约 #{far.old.pk} ")


def test_reschedule_refusals_leave_everything_as_it_was(far, make_api, make_customer, consultation, settings):
    api = make_api(far.customer)
    taker = make_customer()
    with transaction.atomic():  # full: another customer's booking
        slots.slot_book_start(
            product_id=consultation.product.pk, start=far.target.start, order_no="T1", customer_id=taker.pk
        )
    full = _move(api, far.order["order_no"], far.target.pk)
    assert (full.status_code, full.json()["code"]) == (409, "slot_unavailable")
    other = Teacher.objects.create(name="王老师")
    foreign = Slot.objects.create(teacher=other, start=far.old.start, end=far.old.end)
    assert _move(api, far.order["order_no"], foreign.pk).json()["code"] == "slot_unavailable"
    assert _move(api, far.order["order_no"], far.old.pk).json()["code"] == "slot_unavailable"  # the same slot
    free = consultation.slots[-3]
    settings.RESCHEDULE_MIN_NOTICE_HOURS = 24 * 30
    late = _move(api, far.order["order_no"], free.pk)
    assert (late.status_code, late.json()["code"]) == (409, "invalid_state")
    settings.RESCHEDULE_MIN_NOTICE_HOURS = 24
    assert _move(make_api(make_customer()), far.order["order_no"], free.pk).status_code == 404
    assert (
        Booking.objects.filter(slot_id=far.old.pk, live=True).count() == 1
        and Booking.objects.filter(slot_id=free.pk, live=True).count() == 0
    )
    assert Order.objects.get(order_no=far.order["order_no"]).slot_id == far.old.pk
    assert not OrderEvent.objects.filter(note__startswith="改约").exists()


def test_reschedule_an_unpaid_order_is_invalid_state(make_customer, make_api, place_order, consultation):
    api = make_api(make_customer())
    order = place_order(api, items=[(consultation.sku, 1)], slot=consultation.slots[-1])
    response = _move(api, order["order_no"], consultation.slots[-2].pk)
    assert (response.status_code, response.json()["code"]) == (409, "invalid_state")


def test_staff_move_a_booking_in_the_admin(far, django_user_model):
    user = django_user_model.objects.create_user("desk", password="pw-123456", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=["manage_slot", "view_order"]))
    client = Client()
    client.force_login(user)
    order = Order.objects.get(order_no=far.order["order_no"])
    url = reverse("admin:chat_consultation_change", args=[order.pk])
    assert client.get(url).status_code == 200
    response = client.post(url, {"new_slot": far.target.pk, "_save": "Save"})
    assert response.status_code == 302
    assert Order.objects.get(pk=order.pk).slot_id == far.target.pk
    assert (
        Booking.objects.filter(slot_id=far.old.pk, live=True).count() == 0
        and Booking.objects.filter(slot_id=far.target.pk, live=True).count() == 1
    )
    assert OrderEvent.objects.filter(order=order, actor="staff:desk", note__startswith="改约").count() == 1


def test_reminders_once_each_and_following_a_move(far, wechat, make_api, settings):
    wechat.state.upsert_user(far.customer.openid)
    start = Slot.objects.get(pk=far.old.pk).start
    day_before = start - dt.timedelta(hours=23)
    assert reminders.reminders_schedule(now=start - dt.timedelta(hours=25))["created"] == 0
    assert reminders.reminders_schedule(now=day_before)["created"] == 1
    assert reminders.reminders_schedule(now=day_before)["created"] == 0  # beat twice: one row
    row = ConsultationReminder.objects.get()
    assert (row.hours, row.slot_start) == (24, start)
    assert reminders.reminder_send(reminder_id=row.pk, now=day_before) == "sent"
    assert reminders.reminder_send(reminder_id=row.pk, now=day_before) == "sent"  # a redelivery sends nothing
    sent = [
        m
        for m in wechat.state.messages
        if m.touser == far.customer.openid and m.template_id == settings.WECHAT_SUBSCRIBE_TEMPLATE_REMINDER
    ]
    assert len(sent) == 1 and sent[0].data["character_string4"]["value"] == far.order["order_no"]

    # one hour before the old time a pending 1 h reminder exists; then the booking moves
    hour_before = start - dt.timedelta(minutes=50)
    assert reminders.reminders_schedule(now=hour_before)["created"] == 1
    pending = ConsultationReminder.objects.get(hours=1)
    assert _move(make_api(far.customer), far.order["order_no"], far.target.pk).status_code == 200
    assert reminders.reminder_send(reminder_id=pending.pk, now=hour_before) == "skipped"
    new_start = Slot.objects.get(pk=far.target.pk).start
    reminders.reminders_schedule(now=new_start - dt.timedelta(hours=2))
    assert ConsultationReminder.objects.filter(slot_start=new_start, hours=24).count() == 1
    assert (
        len(
            [
                m
                for m in wechat.state.messages
                if m.touser == far.customer.openid and m.template_id == settings.WECHAT_SUBSCRIBE_TEMPLATE_REMINDER
            ]
        )
        == 1
    )


def test_no_reminders_for_cancelled_or_refunded(far):
    Order.objects.filter(order_no=far.order["order_no"]).update(status="refunded")
    start = Slot.objects.get(pk=far.old.pk).start
    assert reminders.reminders_schedule(now=start - dt.timedelta(minutes=30))["created"] == 0
    assert ConsultationReminder.objects.count() == 0


def test_a_dead_workers_lease_expires_and_the_reminder_goes_once(far, wechat):
    wechat.state.upsert_user(far.customer.openid)
    start = Slot.objects.get(pk=far.old.pk).start
    now = start - dt.timedelta(hours=3)
    reminders.reminders_schedule(now=now)
    row = ConsultationReminder.objects.get()
    # a worker claimed it and died: the lease holds others off until it expires
    ConsultationReminder.objects.filter(pk=row.pk).update(locked_until=now + dt.timedelta(seconds=60), attempts=1)
    assert reminders.reminder_send(reminder_id=row.pk, now=now) == "pending"
    later = now + dt.timedelta(minutes=5)
    assert reminders.reminder_send(reminder_id=row.pk, now=later) == "sent"
    assert ConsultationReminder.objects.get(pk=row.pk).attempts == 2
    assert len([m for m in wechat.state.messages if m.touser == far.customer.openid]) == 1


def test_a_reminder_failed_twice_is_one_alert_and_one_robot_message(far, wechat):
    from apps.alerts.models import Alert
    from apps.alerts.services import alerts_sweep

    start = Slot.objects.get(pk=far.old.pk).start  # the customer is unknown to WeChat: every send fails
    now = start - dt.timedelta(hours=3)
    reminders.reminders_schedule(now=now)
    row = ConsultationReminder.objects.get()
    for _ in range(2):  # FAILED; put back by hand and FAILED again
        for attempt in range(ConsultationReminder.MAX_ATTEMPTS):
            reminders.reminder_send(reminder_id=row.pk, now=now + dt.timedelta(minutes=attempt))
        assert ConsultationReminder.objects.get(pk=row.pk).status == "failed"
        ConsultationReminder.objects.filter(pk=row.pk).update(status="pending", attempts=0)
    alert = Alert.objects.get()
    assert (alert.key, alert.kind) == (f"reminder:{row.pk}:failed", "reminder_failed")
    assert alert.title == f"订单 {far.order['order_no']} 的咨询提醒发送失败"
    assert "40003" in alert.text and "请联系顾客确认咨询时间" in alert.text
    assert alerts_sweep(now=timezone.now() + dt.timedelta(minutes=2)) == {"sent": 1}
    [message] = wechat.control.robot_messages()
    assert far.order["order_no"] in message["content"]


@pytest.mark.django_db(transaction=True)  # real commits: what a killed worker leaves is what committed
def test_a_reminder_is_recorded_sent_when_the_worker_dies_right_after_wechat_answered(far, wechat, die_after_answer):
    wechat.state.upsert_user(far.customer.openid)
    now = Slot.objects.get(pk=far.old.pk).start - dt.timedelta(hours=3)
    reminders.reminders_schedule(now=now)
    row = ConsultationReminder.objects.get()
    with die_after_answer(lambda: len(wechat.state.messages) > 0) as death:
        reminders.reminder_send(reminder_id=row.pk, now=now)
    assert death.killed
    later = now + dt.timedelta(seconds=ConsultationReminder.LEASE_SECONDS + 1)  # the dead worker's lease is over
    assert reminders.reminders_schedule(now=later) == {"created": 0, "pushed": 0}
    assert reminders.reminder_send(reminder_id=row.pk, now=later) == "sent"  # its message, redelivered
    assert [m.touser for m in wechat.state.messages] == [far.customer.openid]
    row.refresh_from_db()
    assert (row.status, row.attempts, row.locked_until) == ("sent", 1, None)
