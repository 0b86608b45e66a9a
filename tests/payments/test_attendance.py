"""Attendance of a consultation (API.md "Booking"): the teacher's own bookings once started,
``no_show`` keeps the money, ``teacher_absent`` refunds in full at once and is final; the
command and the admin action through the same service; unmarked counts as attended."""

import datetime as dt

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.utils import timezone

from apps.accounts.models import Customer
from apps.appointments.models import Booking
from apps.orders import services as orders
from apps.orders.models import AfterSale, Order
from apps.payments import refunds
from apps.payments.models import Payment, Refund

pytestmark = pytest.mark.django_db


@pytest.fixture
def held(make_customer, make_api, consultation, place_order):
    """A paid consultation (29900 fen, balance) of a teacher who signs in as a customer;
    ``held.started(minutes)`` moves its booking to have started that long ago."""
    teacher_customer = make_customer()
    consultation.teacher.customer = teacher_customer
    consultation.teacher.save()
    buyer = make_customer(balance_fen=50000)
    api = make_api(buyer)
    slot = consultation.slots[-1]
    order = place_order(api, items=[(consultation.sku, 1)], slot=slot)
    assert api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json").status_code == 200

    class Held:
        order_no = order["order_no"]
        teacher_api = make_api(teacher_customer)
        buyer_id = buyer.pk
        slot_id = slot.pk

        @staticmethod
        def started(minutes: int = 5):
            start = timezone.now() - dt.timedelta(minutes=minutes)
            Booking.objects.filter(order_no=order["order_no"]).update(
                start=start, end=start + dt.timedelta(hours=1), blocked_until=start + dt.timedelta(hours=1)
            )

    return Held


def mark(held, attendance):
    return held.teacher_api.post(
        f"/api/v1/teacher/bookings/{held.order_no}/attendance", {"attendance": attendance}, format="json"
    )


def test_before_the_start_is_409_and_nothing_changes(held):
    answer = mark(held, "attended")
    assert answer.status_code == 409 and answer.json()["code"] == "invalid_state"
    assert Booking.objects.get(order_no=held.order_no).attendance == ""


def test_no_show_keeps_the_money_and_may_change_until_completed(held):
    held.started()
    answer = mark(held, "no_show")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["attendance"] == "no_show"
    assert set(answer.json()) == {"teacher_id", "product_id", "start", "end", "attendance", "reschedules"}
    assert Refund.objects.count() == AfterSale.objects.count() == 0
    assert Order.objects.get(order_no=held.order_no).status == "paid"
    assert mark(held, "attended").json()["attendance"] == "attended"  # changed before completion
    assert orders.order_complete(order=Order.objects.get(order_no=held.order_no), actor="test")
    late = mark(held, "no_show")
    assert late.status_code == 409 and late.json()["code"] == "invalid_state"
    assert Booking.objects.get(order_no=held.order_no).attendance == "attended"


def test_teacher_absent_refunds_in_full_at_once_and_is_final(held):
    held.started()
    answer = mark(held, "teacher_absent")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["attendance"] == "teacher_absent"
    refund = Refund.objects.get()
    assert refund.refund_fen == 29900
    assert AfterSale.objects.get().status == "approved"
    assert Payment.objects.get(order__order_no=held.order_no).refunded_fen == 29900
    assert Order.objects.get(order_no=held.order_no).status == "refunding"
    again = mark(held, "attended")
    assert again.status_code == 409
    assert Booking.objects.get(order_no=held.order_no).attendance == "teacher_absent"
    assert refunds.refund_execute(refund_id=refund.pk) == "success"
    assert Order.objects.get(order_no=held.order_no).status == "refunded"
    assert Customer.objects.get(pk=held.buyer_id).balance_fen == 50000
    assert Booking.objects.filter(slot_id=held.slot_id, live=True).count() == 0
    assert Refund.objects.count() == 1


def test_someone_elses_booking_is_404_and_a_customer_403(held, make_customer, make_api):
    held.started()
    other = make_api(make_customer())
    answer = other.post(
        f"/api/v1/teacher/bookings/{held.order_no}/attendance", {"attendance": "attended"}, format="json"
    )
    assert answer.status_code == 403
    from apps.catalog.models import Teacher

    stranger = make_customer()
    Teacher.objects.create(name="王", title="讲师", customer=stranger)
    answer = make_api(stranger).post(
        f"/api/v1/teacher/bookings/{held.order_no}/attendance", {"attendance": "attended"}, format="json"
    )
    assert answer.status_code == 404
    bad = mark(held, "late")
    assert bad.status_code == 400
    assert Booking.objects.get(order_no=held.order_no).attendance == ""


def test_completion_counts_an_unmarked_booking_as_attended(held):
    held.started()
    assert orders.order_complete(order=Order.objects.get(order_no=held.order_no), actor="test")
    assert Booking.objects.get(order_no=held.order_no).attendance == "attended"


def test_the_command_needs_the_permission_the_service_role_has(held, django_user_model, capsys):
    held.started()
    django_user_model.objects.create_user("nobody", password="pw-123456", is_staff=True)
    with pytest.raises(CommandError):
        call_command("consultation_attendance", held.order_no, "no_show", "--by", "nobody")
    assert Booking.objects.get(order_no=held.order_no).attendance == ""
    clerk = django_user_model.objects.create_user("clerk", password="pw-123456", is_staff=True)
    clerk.groups.add(Group.objects.get(name="客服"))
    call_command("consultation_attendance", held.order_no, "no_show", "--by", "clerk")
    assert capsys.readouterr().out.strip() == f"{held.order_no} marked no_show by clerk"
    assert Booking.objects.get(order_no=held.order_no).attendance == "no_show"


def test_the_admin_action_goes_through_the_same_service(held, django_user_model, client):
    held.started()
    teacher_role = Group.objects.get(name="老师")
    assert teacher_role.permissions.filter(codename="mark_attendance").exists()
    clerk = django_user_model.objects.create_user("clerk2", password="pw-123456", is_staff=True)
    clerk.groups.add(Group.objects.get(name="客服"))
    client.force_login(clerk)
    booking = Booking.objects.get(order_no=held.order_no)
    response = client.post(
        "/admin/appointments/booking/",
        {"action": "mark_teacher_absent", "_selected_action": [booking.pk]},
    )
    assert response.status_code == 302
    assert Booking.objects.get(pk=booking.pk).attendance == "teacher_absent"
    assert Refund.objects.get().refund_fen == 29900
