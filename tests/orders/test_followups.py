"""Follow-ups: outbox rows in the paying transaction, run by idempotent handlers."""

import pytest

from apps.accounts.models import Customer
from apps.orders import followups
from apps.orders.models import FollowUp

pytestmark = pytest.mark.django_db


@pytest.fixture
def paid_order(api, make_sku, address, place_order, wechat, deliver):
    order = place_order(api, items=[(make_sku(price_fen=12800), 1)], address=address)
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])
    deliver()
    return order


def test_followups_send_message_and_award_points_once(paid_order, customer, wechat):
    rows = {f.kind: f for f in FollowUp.objects.all()}
    assert set(rows) == {"subscribe_message", "points_award"}
    for row in rows.values():
        assert followups.followup_execute(row.pk) == "done"
        assert followups.followup_execute(row.pk) == "done"  # redelivered message: no effect
    messages = wechat.control.messages()
    assert len(messages) == 1
    assert messages[0]["touser"] == customer.openid
    assert messages[0]["data"]["character_string1"]["value"] == paid_order["order_no"]
    assert Customer.objects.get(pk=customer.pk).points == 128  # one per yuan of 128.00
    assert FollowUp.objects.filter(status="done", attempts=1).count() == 2


def test_followup_failure_is_retried_then_failed_with_error(paid_order, settings):
    row = FollowUp.objects.get(kind="subscribe_message")
    settings.WECHAT_API_BASE = "http://127.0.0.1:9/"
    for attempt in range(1, FollowUp.MAX_ATTEMPTS + 1):
        status = followups.followup_execute(row.pk)
        assert status == ("failed" if attempt == FollowUp.MAX_ATTEMPTS else "pending")
    row.refresh_from_db()
    assert row.attempts == FollowUp.MAX_ATTEMPTS
    assert "ConnectionError" in row.last_error


def test_redispatch_pushes_stale_pending_rows_again(paid_order, queued):
    from datetime import timedelta

    from django.utils import timezone

    FollowUp.objects.update(dispatched_at=None)  # as if Redis was down at commit
    assert followups.followups_redispatch() == 0  # too fresh: the first push may still come
    later = timezone.now() + timedelta(minutes=3)
    assert followups.followups_redispatch(now=later) == 2
    assert queued("followups")[-2:] == ["apps.orders.tasks.followup_run"] * 2
    assert FollowUp.objects.filter(dispatched_at__isnull=False).count() == 2
