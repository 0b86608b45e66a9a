"""Races of pickup verification (PostgreSQL, real threads): staff of one store verifying one
code at the same moment complete the order once (one verification row, one completion event;
the others are refused with the winner's time and name); one login's simultaneous wrong codes
count exactly PICKUP_VERIFY_FAILURES_PER_HOUR, the rest refused unread, one alert."""

import pytest
from django.utils import timezone

from apps.alerts.models import Alert
from apps.orders.models import Order, OrderEvent, OrderStatus
from apps.stores import services
from apps.stores.exceptions import AlreadyVerified, VerifyThrottled
from apps.stores.models import PickupVerification, PickupVerifyFailure, PickupVerifyHour

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


def test_forty_simultaneous_wrong_codes_of_one_login_count_exactly_the_cap(
    paid_pickup, make_staff, store, race, settings
):
    settings.PICKUP_VERIFY_FAILURES_PER_HOUR = 20
    order = paid_pickup()
    clerk, other = make_staff("clerk", store), make_staff("clerk2", store)
    codes = [f"{(int(order.pickup_code) + i) % 10**8:08d}" for i in range(1, 41)]
    now = timezone.now()  # one clock hour for every thread
    results = race(lambda i: services.pickup_verify(code=codes[i], user=clerk, now=now), 40)
    kinds = [type(r).__name__ for r in results]
    assert (kinds.count("NotFound"), kinds.count("VerifyThrottled")) == (20, 20), kinds
    assert PickupVerifyHour.objects.get(user=clerk).tries == 20
    assert PickupVerifyFailure.objects.filter(user=clerk).count() == 20
    assert Alert.objects.filter(kind=Alert.Kind.PICKUP_VERIFY_FAILURES).count() == 1
    with pytest.raises(VerifyThrottled):
        services.pickup_verify(code=order.pickup_code, user=clerk, now=now)
    assert services.pickup_verify(code=order.pickup_code, user=other, now=now).status == OrderStatus.COMPLETED
