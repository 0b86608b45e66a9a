"""Two staff of one store verify one pickup code at the same moment (PostgreSQL, real threads):
the order completes once, one verification row, one completion event; the other is refused
with the winner's time and name."""

import pytest

from apps.orders.models import Order, OrderEvent, OrderStatus
from apps.stores import services
from apps.stores.exceptions import AlreadyVerified
from apps.stores.models import PickupVerification

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("staff_count", [2, 6])
def test_racing_verifications_complete_the_order_once(paid_pickup, make_staff, store, race, staff_count):
    order = paid_pickup()
    staff = [make_staff(f"clerk{i}", store) for i in range(staff_count)]
    results = race(lambda i: services.pickup_verify(code=order.pickup_code, user=staff[i]), staff_count)
    winners = [r for r in results if isinstance(r, Order)]
    refused = [r for r in results if isinstance(r, AlreadyVerified)]
    assert len(winners) == 1 and len(refused) == staff_count - 1, results
    order.refresh_from_db()
    assert order.status == OrderStatus.COMPLETED
    assert PickupVerification.objects.filter(order=order).count() == 1
    assert OrderEvent.objects.filter(order=order, to_status="completed").count() == 1
    assert all(order.pickup_verified_by in r.message for r in refused)
    assert PickupVerification.objects.get().verified_by.username == order.pickup_verified_by
