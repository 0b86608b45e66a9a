"""Shipping information under races (PostgreSQL, real threads): duplicate deliveries of one
follow-up upload once; staff re-uploads racing each other take distinct versions; two
corrections of one tracking number change it once."""

import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from apps.orders import followups, shipments
from apps.orders.models import FollowUp
from apps.payments import shipping_info
from apps.payments.models import ShippingInfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "payments"))
from shipping_helpers import wechat_paid  # noqa: E402

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

THREADS = 8


@pytest.fixture
def shipped(buyer, wechat, deliver, place_order, make_sku):
    order = wechat_paid(buyer, wechat, deliver, place_order, items=[(make_sku(), 1)])
    assert shipments.order_ship(order=order, actor="staff:t", carrier_code="shunfeng", tracking_no="SF1234567890")
    order.refresh_from_db()
    return order


def test_duplicate_executions_of_one_followup_upload_once(shipped, wechat, race):
    followup = FollowUp.objects.get(order=shipped, kind="shipping_info")
    results = race(lambda i: followups.followup_execute(followup.pk), THREADS)
    assert not [r for r in results if isinstance(r, BaseException)], results
    assert results.count("done") >= 1 and set(results) <= {"done", "pending"}
    assert len(wechat.control.shipping()["uploads"]) == 1
    assert wechat.state.api_calls["wxa/sec/order/upload_shipping_info"] == 1
    info = ShippingInfo.objects.get(order=shipped)
    assert (info.state, info.uploaded_version, info.attempts) == ("uploaded", 1, 1)
    assert FollowUp.objects.get(pk=followup.pk).status == "done"


def test_racing_reuploads_take_distinct_versions(shipped, wechat, race):
    boss = get_user_model().objects.create_superuser("boss-race", password="pw-123456")
    results = race(
        lambda i: shipping_info.shipping_info_reupload(order_id=shipped.pk, user=boss, actor="staff:boss").version,
        THREADS,
    )
    assert sorted(results) == list(range(2, THREADS + 2)), results
    keys = set(FollowUp.objects.filter(order=shipped, kind="shipping_info").values_list("key", flat=True))
    assert keys == {f"shipping_info:{shipped.order_no}:{v}" for v in range(1, THREADS + 2)}
    assert ShippingInfo.objects.get(order=shipped).version == THREADS + 1
    # the worker runs them all: only the latest version is sent
    for pk in FollowUp.objects.filter(order=shipped, kind="shipping_info").order_by("pk").values_list("pk", flat=True):
        assert followups.followup_execute(pk) == "done"
    assert len(wechat.control.shipping()["uploads"]) == 1
    assert ShippingInfo.objects.get(order=shipped).uploaded_version == THREADS + 1


def test_racing_identical_corrections_change_once(shipped, race):
    results = race(
        lambda i: shipments.shipment_correct(
            order=shipped, actor="staff:t", carrier_code="zhongtong", tracking_no="ZT7700012345"
        ),
        THREADS,
    )
    assert results.count(True) == 1 and results.count(False) == THREADS - 1, results
    assert ShippingInfo.objects.get(order=shipped).version == 2
    assert FollowUp.objects.filter(order=shipped, kind="shipping_info").count() == 2
    assert shipped.events.filter(note__startswith="修改快递单号").count() == 1
