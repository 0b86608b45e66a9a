"""Follow-ups under faults: a worker killed mid-task, Redis down at commit, a message delivered
twice, a handler that never succeeds. Each test checks the end state: the outbox rows, the
customer's points and wallet events, the sandbox's messages, the SMS log, the queues.

A paid order's follow-ups leave its transaction as ONE message (``followup_run_many`` with the
three row ids, run one after the other); beat's sweep re-pushes a single row as ``followup_run``.
"""

from __future__ import annotations

import ast
import datetime as dt
import logging
import os
import re
import signal
import threading
import time

import pytest
from django.db.models import F
from django.utils import timezone
from fault_helpers import drain, free_port, taken, wait_for, worker_db_sessions
from kombu import Connection

from apps.accounts.models import Customer, WalletEvent
from apps.orders import followups
from apps.orders.models import FollowUp, Order
from apps.orders.tasks import followup_run

TASK = "apps.orders.tasks.followup_run"  # one row: what the sweep pushes
MANY = "apps.orders.tasks.followup_run_many"  # a transaction's rows: what the commit pushes
KINDS = ("subscribe_message", "sms", "points_award")
POINTS = 128  # one point per whole yuan of the 128.00-yuan order


def _rows(order: dict) -> dict[str, FollowUp]:
    return {f.kind: f for f in FollowUp.objects.filter(order__order_no=order["order_no"])}


def _state(order: dict) -> dict[str, tuple[str, int]]:
    """kind -> (status, attempts) of the order's follow-ups."""
    return {kind: (row.status, row.attempts) for kind, row in _rows(order).items()}


def _awards(order: dict) -> list[int]:
    return list(
        WalletEvent.objects.filter(
            kind=WalletEvent.Kind.POINTS, reason=WalletEvent.Reason.AWARD, ref=order["order_no"]
        ).values_list("amount", flat=True)
    )


def _points(customer) -> int:
    """The points the order earned: frozen until it completes + POINTS_FREEZE_DAYS (API.md), so
    in the ledger's FROZEN rows; none of them spendable yet."""
    from apps.accounts.selectors import points_frozen

    assert Customer.objects.values_list("points", flat=True).get(pk=customer.pk) == 0
    return points_frozen(customer_id=customer.pk)


def _sms_lines(text: str, order: dict) -> list[str]:
    return re.findall(rf"SMS to 13800000000 \[sms:{order['order_no']}\]", text)


def _received(log: str) -> list[str]:
    """Ids of the followup_run messages a worker's log says it received, in order."""
    return re.findall(r"Task apps\.orders\.tasks\.followup_run(?:_many)?\[([0-9a-f-]+)\] received", log)


def _outcomes(log: str) -> list:
    """What each task a worker's log says succeeded returned ('done', or a list for MANY)."""
    return [ast.literal_eval(r) for r in re.findall(r"succeeded in [0-9.]+s: (.+)", log)]


def _age(row: FollowUp, by: dt.timedelta) -> None:
    """Move a row's lease and dispatch time ``by`` into the past: time passing for that row only."""
    FollowUp.objects.filter(pk=row.pk).update(
        locked_until=F("locked_until") - by, dispatched_at=F("dispatched_at") - by
    )


def _restore_unacked(url: str) -> None:
    """What kombu does for a message whose worker vanished, once ``visibility_timeout`` passed:
    move it from the ``unacked`` hash back onto its queue (here with the timeout at 0)."""
    with Connection(url, transport_options={"visibility_timeout": 0}) as conn:
        conn.default_channel.qos.restore_visible(num=100)


# --- 1. a worker killed in the middle of a follow-up ------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_followup_worker_killed_mid_task_is_finished_once_by_a_fresh_worker(
    shop, shop_redis, celery_worker_process, row_lock, wechat
):
    customer, order = shop.paid_order()
    rows = _rows(order)
    assert [m["headers"]["task"] for m in shop_redis.queue()] == [MANY]  # one message, three rows
    # Another session holds the customer's row: the points handler waits on its
    # ``SELECT ... FOR UPDATE`` of that row -- before its effect commits.
    row_lock.hold(Customer._meta.db_table, customer.pk)

    worker = celery_worker_process(shop_redis.url)
    wait_for(lambda: worker_db_sessions(waiting_on_lock=True) == 1, what="the points handler to block")
    killed_task_id = _received(worker.log())[-1]
    before_kill = timezone.now()
    assert _state(order) == {"subscribe_message": ("done", 1), "sms": ("done", 1), "points_award": ("pending", 1)}
    worker.kill()  # SIGKILL to the worker's process group: no ack, no cleanup, no rollback sent
    assert shop_redis.queue() == [] and shop_redis.unacked() == 1  # the message died with it

    row_lock.release()
    # PostgreSQL ends the orphaned session when its UPDATE returns to a closed socket: rollback.
    wait_for(lambda: worker_db_sessions() == 0, what="the killed worker's DB session to end")
    points_row = FollowUp.objects.get(pk=rows["points_award"].pk)
    assert (points_row.status, points_row.attempts) == ("pending", 1)
    assert points_row.locked_until > before_kill  # its lease still runs: nobody may take it yet
    assert _points(customer) == 0 and _awards(order) == []  # the WalletEvent insert rolled back
    assert followups.followups_redispatch(now=timezone.now() + dt.timedelta(minutes=3)) == 0  # leased

    _age(points_row, dt.timedelta(seconds=FollowUp.LEASE_SECONDS + 1))  # the lease ran out
    assert followups.followups_redispatch() == 1
    assert [m["headers"]["task"] for m in shop_redis.queue()] == [TASK]
    fresh = celery_worker_process(shop_redis.url)
    wait_for(lambda: FollowUp.objects.get(pk=points_row.pk).status == "done", what="the points follow-up")
    assert _points(customer) == POINTS and _awards(order) == [POINTS]

    # Much later kombu restores the killed worker's unacked message: it finds the row done.
    _restore_unacked(shop_redis.url)
    wait_for(lambda: not shop_redis.queue() and shop_redis.unacked() == 0, what="the restored message to run")
    wait_for(lambda: fresh.log().count("succeeded in") == 2, what="the fresh worker's two tasks")
    fresh.stop()
    assert _received(fresh.log())[-1] == killed_task_id  # the very message the killed worker held
    assert _outcomes(fresh.log()) == ["done", ["done", "done", "done"]]
    assert _state(order) == {"subscribe_message": ("done", 1), "sms": ("done", 1), "points_award": ("done", 2)}
    assert _points(customer) == POINTS and _awards(order) == [POINTS]
    assert len(wechat.control.messages(touser=customer.openid)) == 1
    assert len(_sms_lines(worker.log() + fresh.log(), order)) == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_followup_pool_child_killed_mid_task_is_requeued_and_finished_once(
    shop, shop_redis, celery_worker_process, row_lock, wechat
):
    """The OOM killer's usual victim: the prefork child, not the worker. The parent sees the
    child lost and (``task_reject_on_worker_lost``) puts the message straight back; that copy
    meets the dead child's lease and does nothing; the sweep finishes the row after the lease."""
    customer, order = shop.paid_order()
    points_row = _rows(order)["points_award"]
    row_lock.hold(Customer._meta.db_table, customer.pk)
    worker = celery_worker_process(shop_redis.url, pool="prefork", concurrency=1)
    wait_for(lambda: worker_db_sessions(waiting_on_lock=True) == 1, what="the points handler to block")
    killed_task_id = _received(worker.log())[-1]
    (child,) = worker.children()
    os.kill(child, signal.SIGKILL)  # only the pool child dies; the worker lives on

    wait_for(lambda: "WorkerLostError" in worker.log(), what="the worker to notice its lost child")
    wait_for(lambda: worker.log().count("succeeded in") == 1, what="the requeued copy to run")
    assert _received(worker.log()).count(killed_task_id) == 2  # the same message, requeued
    assert _outcomes(worker.log()) == [["done", "done", "pending"]]  # the points row is leased
    assert shop_redis.queue() == [] and shop_redis.unacked() == 0
    row_lock.release()
    wait_for(lambda: worker_db_sessions(waiting_on_lock=True) == 0, what="the orphaned session to end")
    assert _points(customer) == 0 and _awards(order) == []
    assert _state(order)["points_award"] == ("pending", 1)

    _age(points_row, dt.timedelta(seconds=FollowUp.LEASE_SECONDS + 1))
    assert followups.followups_redispatch() == 1
    wait_for(lambda: FollowUp.objects.get(pk=points_row.pk).status == "done", what="the points follow-up")
    worker.stop()
    assert _state(order) == {"subscribe_message": ("done", 1), "sms": ("done", 1), "points_award": ("done", 2)}
    assert _points(customer) == POINTS and _awards(order) == [POINTS]
    assert len(wechat.control.messages(touser=customer.openid)) == 1
    assert len(_sms_lines(worker.log(), order)) == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_followup_worker_killed_while_wechat_answers_sends_again_and_loses_nothing(
    shop, shop_redis, celery_worker_process, wechat
):
    """The window that stays: WeChat has taken the message, its answer has not reached the
    worker (here it is held back 5 s; in production the milliseconds before the worker's
    ``done`` UPDATE commits). A worker killed then leaves the row pending; once its lease ran
    out the sweep sends it again (WeChat has no idempotency key for messages): twice, never lost."""
    customer, order = shop.paid_order()
    rows = _rows(order)
    wechat.control.set_faults(subscribe_send={"delay_seconds": 5, "count": 1})
    worker = celery_worker_process(shop_redis.url)
    wait_for(lambda: len(wechat.state.messages) == 1, what="WeChat to take the paid message")
    worker.kill()
    row = FollowUp.objects.get(pk=rows["subscribe_message"].pk)
    assert (row.status, row.attempts) == ("pending", 1) and row.locked_until > timezone.now()

    assert _state(order) == {
        "subscribe_message": ("pending", 1),
        "sms": ("pending", 0),
        "points_award": ("pending", 0),
    }  # the rest of the message died with it

    _age(row, dt.timedelta(seconds=FollowUp.LEASE_SECONDS + 1))
    assert followups.followups_redispatch() == 1
    fresh = celery_worker_process(shop_redis.url)
    wait_for(lambda: _state(order)["subscribe_message"] == ("done", 2), what="the paid message, sent again")
    _restore_unacked(shop_redis.url)  # the killed worker's message: the message's row is done, the rest run
    wait_for(
        lambda: _state(order) == {kind: ("done", 1 + (kind == "subscribe_message")) for kind in KINDS},
        what="the three follow-ups",
    )
    wait_for(lambda: not shop_redis.queue() and shop_redis.unacked() == 0, what="the restored message to run")
    wait_for(lambda: fresh.log().count("succeeded in") == 2, what="the fresh worker's two tasks")
    assert _outcomes(fresh.log()) == ["done", ["done", "done", "done"]]
    fresh.stop()
    first, again = wechat.control.messages(touser=customer.openid)
    assert first["data"] == again["data"] and first["data"]["character_string1"]["value"] == order["order_no"]
    assert len(_sms_lines(worker.log() + fresh.log(), order)) == 1
    assert _points(customer) == POINTS and _awards(order) == [POINTS]


# --- 2. Redis down between the commit and the push ------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_followups_committed_while_redis_is_down_are_pushed_by_the_sweep_and_run_once(shop, shop_redis, wechat, caplog):
    customer, order = shop.unpaid_order()
    shop_redis.stop()

    started = time.monotonic()
    attempts = shop.pay(order)  # commit succeeds; each on_commit push fails
    answered_in = time.monotonic() - started
    assert [a["ok"] for a in attempts] == [True] and "SUCCESS" in attempts[0]["response"]
    assert answered_in < 5, f"notification answered in {answered_in:.1f}s (WeChat waits 5 s)"
    # The three rows are one message: one push fails (starmall.dispatch), and they are left to
    # the sweep without the notification waiting on more pushes.
    log = [r.getMessage() for r in caplog.records if r.name == "starmall.dispatch"]
    assert sum("could not push apps.orders.tasks.followup_run_many" in m for m in log) == 1
    assert sum("could not push" in m or "left to the sweep" in m for m in log) == 1
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"
    rows = _rows(order)
    assert {k: (r.status, r.attempts, r.dispatched_at) for k, r in rows.items()} == {
        kind: ("pending", 0, None) for kind in KINDS
    }
    later = timezone.now() + dt.timedelta(minutes=3)
    assert followups.followups_redispatch(now=later) == 0  # the beat runs while Redis is still down
    assert FollowUp.objects.filter(order__order_no=order["order_no"], dispatched_at__isnull=True).count() == 3

    shop_redis.start()  # same port, empty: whatever was in Redis is gone
    assert shop_redis.queue() == []
    assert followups.followups_redispatch() == 0  # rows this fresh may still be pushed by their commit
    assert followups.followups_redispatch(now=later) == 3
    assert [m["headers"]["task"] for m in shop_redis.queue()] == [TASK] * 3
    assert FollowUp.objects.filter(order__order_no=order["order_no"], dispatched_at__isnull=True).count() == 0

    with caplog.at_level(logging.INFO, logger="apps.orders.sms"):
        assert drain() == ["done"] * 3
    assert shop_redis.queue() == [] and shop_redis.unacked() == 0
    assert _state(order) == {kind: ("done", 1) for kind in KINDS}
    messages = wechat.control.messages()
    assert len(messages) == 1 and messages[0]["touser"] == customer.openid
    assert messages[0]["data"]["character_string1"]["value"] == order["order_no"]
    assert len(_sms_lines("\n".join(r.getMessage() for r in caplog.records), order)) == 1
    assert _points(customer) == POINTS and _awards(order) == [POINTS]


@pytest.mark.django_db(transaction=True)
def test_followup_push_to_a_hung_redis_does_not_hold_the_notification_answer(shop, shop_redis):
    customer, order = shop.unpaid_order()
    shop_redis.freeze()  # connections are accepted, nothing is answered
    watchdog = threading.Timer(6, shop_redis.thaw)  # bounds this test if the push hangs
    watchdog.start()
    try:
        started = time.monotonic()
        attempts = shop.pay(order)
        answered_in = time.monotonic() - started
    finally:
        watchdog.cancel()
        shop_redis.thaw()
    assert [a["ok"] for a in attempts] == [True]
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"
    assert answered_in < 5, f"notification answered in {answered_in:.1f}s (WeChat waits 5 s)"


# --- 3. one follow-up delivered twice -----------------------------------------------------------


def _slow_handlers(monkeypatch, seconds: float) -> None:
    """Each follow-up (send or database work) takes ``seconds`` before its effect, so a second
    delivery surely overlaps it."""

    def slow(handler):
        def run(followup):
            time.sleep(seconds)
            return handler(followup)

        return run

    for registry in ("SENDS", "HANDLERS"):
        monkeypatch.setattr(followups, registry, {k: slow(h) for k, h in getattr(followups, registry).items()})


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_followup_delivered_twice_at_once_has_one_effect(shop, shop_redis, wechat, monkeypatch, caplog, race):
    customer, order = shop.paid_order()
    # The sweep runs while the first message still waits (a slow or backed-up worker): each row
    # is now on the queue twice, in the order's one message and in the sweep's one per row.
    assert followups.followups_redispatch(now=timezone.now() + dt.timedelta(minutes=3)) == 3
    assert [m["headers"]["task"] for m in shop_redis.queue()] == [MANY] + [TASK] * 3
    _slow_handlers(monkeypatch, 0.3)

    with caplog.at_level(logging.INFO, logger="apps.orders.sms"), taken() as deliveries:
        assert [d.task for d in deliveries] == [MANY] + [TASK] * 3
        assert sorted(deliveries[0].args[0]) == sorted(d.args[0] for d in deliveries[1:])
        # All four at the same moment: each row is claimed by its single copy or by the order's
        # message, never both (a copy arriving while the row is leased or done changes nothing).
        results = race(lambda i: deliveries[i].run(), 4)
        many, singles = results[0], results[1:]
        assert len(many) == 3 and set(many) | set(singles) <= {"done", "pending"}, results
        for delivery in deliveries:
            delivery.ack()

    assert shop_redis.queue() == [] and shop_redis.unacked() == 0
    assert _state(order) == {kind: ("done", 1) for kind in KINDS}
    assert _points(customer) == POINTS and _awards(order) == [POINTS]
    assert len(wechat.control.messages(touser=customer.openid)) == 1
    assert len(_sms_lines("\n".join(r.getMessage() for r in caplog.records), order)) == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_followup_duplicates_on_a_prefork_worker_have_one_effect(shop, shop_redis, celery_worker_process, wechat):
    customer, order = shop.paid_order()
    assert followups.followups_redispatch(now=timezone.now() + dt.timedelta(minutes=3)) == 3
    assert len(shop_redis.queue()) == 4  # the order's one message, the sweep's three

    worker = celery_worker_process(shop_redis.url, pool="prefork", concurrency=2)
    wait_for(lambda: worker.log().count("succeeded in") == 4, what="four deliveries")
    # acks_late: "succeeded" is logged before the ack reaches Redis; stopping the worker in
    # between would make kombu restore the unacked message to the queue (seen under load).
    wait_for(lambda: shop_redis.queue() == [] and shop_redis.unacked() == 0, what="four acks")
    worker.stop()
    assert shop_redis.queue() == [] and shop_redis.unacked() == 0
    outcomes = [o for task in _outcomes(worker.log()) for o in (task if isinstance(task, list) else [task])]
    # Each copy finds the row done, or (run beside the other copy) leased by it: "pending".
    assert len(outcomes) == 6 and set(outcomes) <= {"done", "pending"}, outcomes
    assert _state(order) == {kind: ("done", 1) for kind in KINDS}
    assert _points(customer) == POINTS and _awards(order) == [POINTS]
    assert len(wechat.control.messages(touser=customer.openid)) == 1
    assert len(_sms_lines(worker.log(), order)) == 1


# --- 4. a follow-up that never succeeds -------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_followup_that_keeps_failing_ends_failed_with_one_alert(shop, shop_redis, wechat, settings, caplog):
    customer, order = shop.paid_order()
    settings.WECHAT_API_BASE = f"http://127.0.0.1:{free_port()}/"  # WeChat unreachable: nothing listens
    caplog.set_level(logging.INFO, logger="apps.orders")
    row = _rows(order)["subscribe_message"]

    now = timezone.now()
    outcomes = drain()  # first delivery of the three follow-ups: the order's one message
    assert outcomes == [["pending", "done", "done"]]  # message (WeChat unreachable), SMS, points
    for attempt in range(2, FollowUp.MAX_ATTEMPTS + 1):  # the beat re-pushes it, a worker runs it
        now += dt.timedelta(minutes=3)
        assert followups.followups_redispatch(now=now) == 1
        assert drain() == ["failed" if attempt == FollowUp.MAX_ATTEMPTS else "pending"]

    row.refresh_from_db()
    assert (row.status, row.attempts, row.locked_until) == ("failed", FollowUp.MAX_ATTEMPTS, None)
    assert row.last_error.startswith("ConnectionError")
    # Afterwards: the sweep leaves a failed row alone and a stray delivery changes nothing.
    assert followups.followups_redispatch(now=now + dt.timedelta(hours=1)) == 0
    followup_run.delay(row.pk)
    assert drain() == ["failed"]
    row.refresh_from_db()
    assert (row.status, row.attempts) == ("failed", FollowUp.MAX_ATTEMPTS)

    logged = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "apps.orders.followups"]
    alerts = [(level, m) for level, m in logged if "ALERT" in m]
    assert len(alerts) == 1, alerts
    assert alerts[0][0] == "ERROR"
    assert alerts[0][1].startswith(f"ALERT follow-up {row.key} FAILED after {FollowUp.MAX_ATTEMPTS} attempts: ")
    assert sum("failed (attempt" in m for _, m in logged) == FollowUp.MAX_ATTEMPTS - 1
    assert wechat.control.messages() == []
    assert _state(order) == {
        "subscribe_message": ("failed", FollowUp.MAX_ATTEMPTS),
        "sms": ("done", 1),
        "points_award": ("done", 1),
    }
    assert _points(customer) == POINTS and _awards(order) == [POINTS]
    assert len(_sms_lines("\n".join(r.getMessage() for r in caplog.records), order)) == 1
