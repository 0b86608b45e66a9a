"""Racing waitlist joins and bookings on PostgreSQL with real threads: one customer's joins never
pass 3 waiting entries nor make two of one date; of two notified customers the first to book wins."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.appointments import bookings, waitlist
from apps.appointments.exceptions import SlotUnavailable
from apps.appointments.models import Booking, WaitlistEntry
from starmall.errors import LimitExceeded

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N = 6


def _join(customer, h, day):
    return waitlist.waitlist_join(customer_id=customer.pk, teacher_id=h.teacher.pk, product_id=h.product.pk, date=day)


def test_racing_joins_of_one_customer_stop_at_three(make_customer, waitlist_teacher, race, is_postgres):
    assert is_postgres
    h = waitlist_teacher
    days = [h.day + dt.timedelta(days=i) for i in range(N)]
    other = make_customer()
    for day in days:
        h.book(other, day)
    person = make_customer()
    results = race(lambda i: _join(person, h, days[i]), N)
    joined = [r for r in results if isinstance(r, tuple)]
    refused = [r for r in results if isinstance(r, LimitExceeded)]
    assert (len(joined), len(refused)) == (3, N - 3), results
    assert WaitlistEntry.objects.filter(customer=person, status="waiting").count() == 3


def test_racing_same_joins_make_one_entry(make_customer, waitlist_teacher, race, is_postgres):
    assert is_postgres
    h = waitlist_teacher
    h.book(make_customer())
    person = make_customer()
    results = race(lambda i: _join(person, h, h.day), N)
    assert all(isinstance(r, tuple) for r in results), results
    assert len({entry.pk for entry, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    assert WaitlistEntry.objects.filter(customer=person).count() == 1


def test_two_notified_customers_racing_to_book_the_first_wins(make_customer, waitlist_teacher, race, is_postgres):
    assert is_postgres
    h = waitlist_teacher
    held = h.book(make_customer())
    people = [make_customer(), make_customer()]
    for person in people:
        _join(person, h, h.day)
    bookings.booking_release(order_no=held.order_no)
    assert waitlist.waitlist_sweep()["notified"] == 2
    results = race(lambda i: h.book(people[i]), 2)
    won = [r for r in results if isinstance(r, Booking)]
    lost = [r for r in results if isinstance(r, SlotUnavailable)]
    assert (len(won), len(lost)) == (1, 1), results
    assert waitlist.waitlist_sweep()["booked"] == 1
    statuses = {e.customer_id: e.status for e in WaitlistEntry.objects.all()}
    assert statuses == {won[0].customer_id: "booked", ({p.pk for p in people} - {won[0].customer_id}).pop(): "notified"}
