"""The cancellation policy of a paid consultation (API.md "Booking"): full refund at least
CANCEL_FULL_REFUND_HOURS ahead, LATE_CANCEL_REFUND_PERCENT % later, 409 once started."""

import datetime as dt
import types

import pytest
from django.utils import timezone

from apps.accounts.models import Customer
from apps.appointments.models import Booking
from apps.orders.models import AfterSale, Order
from apps.payments import cancellations, refunds
from apps.payments.models import Payment, Refund

pytestmark = pytest.mark.django_db

NOW = timezone.now().replace(microsecond=0)


@pytest.fixture
def booked(make_customer, make_api, consultation, place_order, monkeypatch):
    """``booked(ahead)``: a consultation paid from the balance (29901 fen: odd) whose booking
    starts ``ahead`` after the frozen policy clock NOW -> (api, order_no, slot)."""
    consultation.sku.price_fen = 29901
    consultation.sku.save()
    monkeypatch.setattr(cancellations, "timezone", types.SimpleNamespace(now=lambda: NOW, localtime=timezone.localtime))

    def book(ahead: dt.timedelta):
        api = make_api(make_customer(balance_fen=50000))
        slot = consultation.slots[-1]
        order = place_order(api, items=[(consultation.sku, 1)], slot=slot)
        paid = api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
        assert paid.status_code == 200, paid.json()
        start = NOW + ahead
        Booking.objects.filter(order_no=order["order_no"]).update(
            start=start, end=start + dt.timedelta(hours=1), blocked_until=start + dt.timedelta(hours=1)
        )
        return api, order["order_no"], slot

    return book


def ask(api, order_no, **body):
    return api.post(f"/api/v1/orders/{order_no}/refund", {"reason": "时间不合适", **body}, format="json")


def test_exactly_full_refund_hours_ahead_refunds_everything_at_once(booked):
    api, order_no, slot = booked(dt.timedelta(hours=24))
    answer = ask(api, order_no, amount_fen=100)  # whatever was asked: the policy decides
    assert answer.status_code == 202, answer.json()
    assert answer.json()["status"] == "approved"
    assert answer.json()["amount_fen"] == 29901
    refund = Refund.objects.get()
    assert refund.refund_fen == 29901 and refund.restock
    assert AfterSale.objects.get().decided_by == cancellations.POLICY_ACTOR
    assert Order.objects.get(order_no=order_no).status == "refunding"
    assert Booking.objects.get(order_no=order_no).live is False  # released at approval
    assert Booking.objects.filter(slot_id=slot.pk, live=True).count() == 0
    assert refunds.refund_execute(refund_id=refund.pk) == "success"
    assert Order.objects.get(order_no=order_no).status == "refunded"
    assert Customer.objects.get(pk=Order.objects.get(order_no=order_no).customer_id).balance_fen == 50000


def test_a_minute_later_refunds_the_late_percent_rounded_down_and_keeps_the_rest(booked):
    api, order_no, slot = booked(dt.timedelta(hours=23, minutes=59))
    answer = ask(api, order_no)
    assert answer.status_code == 202, answer.json()
    assert answer.json()["status"] == "approved"
    assert answer.json()["amount_fen"] == 14950  # 50 % of 29901 fen, down to the fen
    refund = Refund.objects.get()
    assert refund.refund_fen == 14950
    assert Payment.objects.get(order__order_no=order_no).refunded_fen == 14950
    assert Order.objects.get(order_no=order_no).status == "refunding"
    assert Booking.objects.get(order_no=order_no).live is False
    assert Booking.objects.filter(slot_id=slot.pk, live=True).count() == 0
    assert refunds.refund_execute(refund_id=refund.pk) == "success"
    order = Order.objects.get(order_no=order_no)
    assert order.status == "refunded"
    assert Customer.objects.get(pk=order.customer_id).balance_fen == 50000 - 29901 + 14950
    again = ask(api, order_no, reason="再退一次")  # the rest is kept
    assert again.status_code == 409 and again.json()["code"] == "invalid_state"
    assert Refund.objects.count() == 1


def test_after_the_start_is_refused_and_nothing_written(booked):
    api, order_no, slot = booked(dt.timedelta(minutes=-1))
    answer = ask(api, order_no)
    assert answer.status_code == 409 and answer.json()["code"] == "invalid_state"
    assert AfterSale.objects.count() == Refund.objects.count() == 0
    assert Payment.objects.get(order__order_no=order_no).refunded_fen == 0
    assert Order.objects.get(order_no=order_no).status == "paid"
    assert Booking.objects.get(order_no=order_no).live is True
    assert Booking.objects.filter(slot_id=slot.pk, live=True).count() == 1


def test_the_same_request_again_returns_the_same_refund(booked):
    api, order_no, _ = booked(dt.timedelta(days=3))
    first = ask(api, order_no)
    again = ask(api, order_no)
    assert again.status_code == 202
    assert again.json()["refund_no"] == first.json()["refund_no"]
    assert Refund.objects.count() == AfterSale.objects.count() == 1


def test_a_cancelled_booking_frees_its_start_for_the_waitlist(make_api, make_customer, waitlist_teacher, place_order):
    from apps.appointments import waitlist
    from apps.catalog.models import Sku

    h = waitlist_teacher  # one start a day; h.day is the day after tomorrow (more than 24 h away)
    sku = Sku.objects.create(product=h.product, specs={"时长": "60分钟"}, price_fen=6001, stock=100)
    api = make_api(make_customer(balance_fen=10000))
    order = place_order(api, items=[(sku, 1)], start=h.start(h.day).isoformat())
    assert api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json").status_code == 200
    joined = make_api(make_customer()).post(
        f"/api/v1/teachers/{h.teacher.pk}/waitlist",
        {"product_id": h.product.pk, "date": h.day.isoformat()},
        format="json",
    )
    assert joined.status_code == 201, joined.json()
    assert waitlist.waitlist_sweep()["notified"] == 0  # still full
    answer = ask(api, order["order_no"])
    assert answer.json()["amount_fen"] == 6001 and answer.json()["status"] == "approved"
    assert waitlist.listed_starts(teacher_id=h.teacher.pk, product_id=h.product.pk, date=h.day) != []
    assert waitlist.waitlist_sweep()["notified"] == 1
