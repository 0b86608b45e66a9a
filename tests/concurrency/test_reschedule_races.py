"""Racing movers on PostgreSQL with real threads: the last place of a slot goes to one of them."""

import pytest

from apps.appointments.exceptions import SlotUnavailable
from apps.appointments.models import Booking, Slot
from apps.orders.models import Order, OrderEvent
from apps.orders.reschedule import order_reschedule

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

N = 6


def test_movers_racing_for_the_last_place_one_wins(
    make_customer, make_api, place_order, consultation, race, is_postgres
):
    assert is_postgres
    target = consultation.slots[-1]
    orders = []
    for i in range(N):
        customer = make_customer(balance_fen=100000)
        api = make_api(customer)
        order = place_order(api, items=[(consultation.sku, 1)], slot=consultation.slots[-2 - i])
        assert (
            api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json").status_code == 200
        )
        orders.append(order["order_no"])

    results = race(lambda i: order_reschedule(order_no=orders[i], slot_id=target.pk, actor="customer"), N)

    moved = [r for r in results if isinstance(r, Order)]
    refused = [r for r in results if isinstance(r, SlotUnavailable)]
    assert (len(moved), len(refused)) == (1, N - 1), results
    assert Booking.objects.filter(slot_id=target.pk, live=True).count() == 1
    assert Booking.objects.filter(slot=target).count() == 1
    winner = moved[0].order_no
    for i, order_no in enumerate(orders):  # every loser still holds its old place
        old = consultation.slots[-2 - i]
        assert Booking.objects.filter(slot_id=old.pk, live=True).count() == (0 if order_no == winner else 1)
    assert OrderEvent.objects.filter(note__startswith="改约").count() == 1


def test_two_movers_swapping_slots_do_not_deadlock(
    make_customer, make_api, place_order, consultation, race, is_postgres
):
    assert is_postgres
    a, b = consultation.slots[-1], consultation.slots[-2]
    Slot.objects.filter(pk__in=[a.pk, b.pk]).update(capacity=2)
    orders = []
    for slot in (a, b):
        customer = make_customer(balance_fen=100000)
        api = make_api(customer)
        order = place_order(api, items=[(consultation.sku, 1)], slot=slot)
        assert (
            api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json").status_code == 200
        )
        orders.append(order["order_no"])
    targets = [b.pk, a.pk]

    results = race(lambda i: order_reschedule(order_no=orders[i], slot_id=targets[i], actor="customer"), 2)

    # The teacher cannot hold two consultations at once (API.md "Booking": two live bookings
    # never overlap), whatever a legacy slot's capacity says: each target is the other's time,
    # so both moves are refused, promptly (no deadlock), and each keeps its own booking.
    assert all(isinstance(r, SlotUnavailable) for r in results), results
    assert (
        Booking.objects.filter(slot_id=a.pk, live=True).count() == 1
        and Booking.objects.filter(slot_id=b.pk, live=True).count() == 1
    )
    assert Order.objects.get(order_no=orders[0]).slot_id == a.pk
    assert Order.objects.get(order_no=orders[1]).slot_id == b.pk
    assert Booking.objects.get(order_no=orders[0]).start == a.start
