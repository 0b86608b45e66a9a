"""Follow-ups: outbox rows in the paying transaction, run by idempotent handlers."""

import datetime as dt
import logging

import pytest
from django.db import connection
from django.utils import timezone

from apps.accounts.models import Customer
from apps.accounts.selectors import points_frozen
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
    assert set(rows) == {"subscribe_message", "sms", "points_award"}
    for row in rows.values():
        assert followups.followup_execute(row.pk) == "done"
        assert followups.followup_execute(row.pk) == "done"  # redelivered message: no effect
    messages = wechat.control.messages()
    assert len(messages) == 1
    assert messages[0]["touser"] == customer.openid
    assert messages[0]["data"]["character_string1"]["value"] == paid_order["order_no"]
    # one per yuan of 128.00, frozen until the order completes + POINTS_FREEZE_DAYS (API.md)
    assert Customer.objects.get(pk=customer.pk).points == 0
    assert points_frozen(customer_id=customer.pk) == 128
    assert FollowUp.objects.filter(status="done", attempts=1).count() == 3


def test_followup_failure_is_retried_then_failed_with_error(paid_order, settings):
    row = FollowUp.objects.get(kind="subscribe_message")
    settings.WECHAT_API_BASE = "http://127.0.0.1:9/"
    for attempt in range(1, FollowUp.MAX_ATTEMPTS + 1):
        status = followups.followup_execute(row.pk)
        assert FollowUp.objects.get(pk=row.pk).locked_until is None  # a failure frees the row
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
    assert followups.followups_redispatch(now=later) == 3
    assert queued("followups")[-3:] == ["apps.orders.tasks.followup_run"] * 3
    assert FollowUp.objects.filter(dispatched_at__isnull=False).count() == 3


def test_followup_sms_goes_to_the_backend_with_the_address_phone(paid_order, caplog):
    import logging

    row = FollowUp.objects.get(kind="sms")
    with caplog.at_level(logging.INFO, logger="apps.orders.sms"):
        assert followups.followup_execute(row.pk) == "done"
    assert [r.getMessage() for r in caplog.records] == [
        f"SMS to 13800000000 [sms:{paid_order['order_no']}]: 【星商城】订单{paid_order['order_no']}已支付128.00元，感谢惠顾。"
    ]


def test_followup_claimed_by_a_live_worker_is_not_run_again(paid_order):
    from datetime import timedelta

    from django.utils import timezone

    row = FollowUp.objects.get(kind="points_award")
    FollowUp.objects.filter(pk=row.pk).update(locked_until=timezone.now() + timedelta(minutes=5))
    assert followups.followup_execute(row.pk) == "pending"  # another worker holds it
    assert Customer.objects.get(pk=paid_order_customer(row)).points == 0
    later = timezone.now() + timedelta(minutes=6)  # that worker died; its lease ran out
    assert followups.followup_execute(row.pk, now=later) == "done"
    assert points_frozen(customer_id=paid_order_customer(row)) == 128  # earned once, frozen
    assert Customer.objects.get(pk=paid_order_customer(row)).points == 0


def paid_order_customer(row):
    return row.order.customer_id


@pytest.mark.django_db(transaction=True)  # real commits: what a killed worker leaves is what committed
@pytest.mark.parametrize("kind", ["subscribe_message", "sms"])
def test_followup_send_recorded_done_survives_the_worker_dying_right_after_the_answer(
    kind, paid_order, customer, wechat, caplog, die_after_answer
):
    caplog.set_level(logging.INFO, logger="apps.orders.sms")

    def sent() -> list:
        """What the provider accepted: the sandbox's messages, the SMS backend's lines."""
        if kind == "sms":
            return [r.getMessage() for r in caplog.records if r.getMessage().startswith("SMS to ")]
        return [m.touser for m in wechat.state.messages]

    row = FollowUp.objects.get(kind=kind)
    with die_after_answer(lambda: len(sent()) > 0) as death:
        followups.followup_execute(row.pk)
    assert death.killed
    # Later: beat's sweep (the dead worker's lease has run out), then kombu hands the killed
    # worker's unacknowledged message to another worker.
    later = timezone.now() + dt.timedelta(seconds=FollowUp.LEASE_SECONDS + 1)
    pushed = followups.followups_redispatch(now=later)
    assert followups.followup_execute(row.pk, now=later) == "done"

    expected = (
        [
            f"SMS to 13800000000 [sms:{paid_order['order_no']}]: 【星商城】订单{paid_order['order_no']}"
            f"已支付128.00元，感谢惠顾。"
        ]
        if kind == "sms"
        else [customer.openid]
    )
    assert (sent(), pushed) == (expected, 2)  # the sweep pushed the order's two other rows, not this one
    row.refresh_from_db()
    assert (row.status, row.attempts, row.locked_until) == ("done", 1, None)


@pytest.mark.django_db(transaction=True)
def test_followup_sends_call_their_provider_with_no_transaction_open(paid_order, monkeypatch):
    """A send inside a transaction is recorded only at its COMMIT; under SQLite (IMMEDIATE) it
    also holds the write lock, every other writer waiting as long as the provider takes."""
    from apps.accounts import wechat as wechat_api
    from apps.orders import sms

    inside: dict[str, bool] = {}
    message, text = wechat_api.send_subscribe_message, sms.LogSmsBackend.send

    def message_seen(**kwargs):
        inside["subscribe_message"] = connection.in_atomic_block
        return message(**kwargs)

    def text_seen(self, **kwargs):
        inside["sms"] = connection.in_atomic_block
        return text(self, **kwargs)

    monkeypatch.setattr(wechat_api, "send_subscribe_message", message_seen)
    monkeypatch.setattr(sms.LogSmsBackend, "send", text_seen)
    for row in FollowUp.objects.all():
        assert followups.followup_execute(row.pk) == "done"
    assert inside == {"subscribe_message": False, "sms": False}
