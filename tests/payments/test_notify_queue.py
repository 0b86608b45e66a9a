"""A payment result's first delivery queued by the notify gate and applied by the worker
(``apps.payments.notify_queue``, ``starmall.gates.payment_notify``).

The gate may answer SUCCESS only for what Django would apply and answer SUCCESS, and only once
the row is committed; the worker's apply must then do exactly what Django's request did (paid
once, one "paid" event, one set of follow-ups, one audit row per delivery). Runs on PostgreSQL
(the gate's own connections see only committed rows: transaction=True).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
import time
from collections import Counter

import pytest
from django.utils import timezone
from django_redis import get_redis_connection
from pay_helpers import pay_result, signed_xml

from apps.orders.models import FollowUp, Order, OrderEvent
from apps.payments import notifications, notify_duplicates, notify_queue, tasks
from apps.payments.models import Notification, Payment, QueuedNotification
from starmall import dispatch
from starmall.gates import payment_notify, postgres
from starmall.gates.payment_notify import NOTIFY_PATH, PaymentNotifyGate
from tests.orders.test_create_gate import _no_gate_connection_left, run  # noqa: F401 - an autouse fixture
from tests.orders.test_soldout_gate import Inner, _same
from tests.payments.test_notify_gate import HEADERS, SUCCESS, _unpaid_at_wechat, django_notify, marker, outcomes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.fixture(autouse=True)
def pushed(monkeypatch):
    """The apply tasks the gate pushes (task name, args), recorded instead of sent: the tests
    run them as the worker would, when they choose."""
    sent: list[tuple[str, tuple]] = []

    def push(task, *args, **options):
        sent.append((task.name, args))
        return True

    monkeypatch.setattr(dispatch, "push", push)
    return sent


@pytest.fixture
def no_conn_max_age(monkeypatch):
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)


def wakes(pushed: list[tuple[str, tuple]]) -> int:
    """How many times the gate woke the worker (pushed the drain task)."""
    return sum(1 for name, _args in pushed if name == tasks.notifications_queued_drain.name)


def deliver(bodies: list[bytes], gate: PaymentNotifyGate | None = None) -> tuple[list[tuple[int, dict, bytes]], Inner]:
    """``bodies`` through a PaymentNotifyGate in front of :class:`Inner`, at once in one event loop."""
    inner = Inner()
    gate = gate or PaymentNotifyGate(inner)
    gate.app = inner
    return run(gate, [(body, HEADERS) for body in bodies], path=NOTIFY_PATH), inner


def work() -> int:
    """What the worker does with the queue: every row applied (the sweep, as if they were old)."""
    return notify_queue.queued_sweep(now=timezone.now() + dt.timedelta(hours=1))


def test_a_first_delivery_is_queued_answered_as_django_answers_and_applied_once(
    buyer, make_sku, place_order, wechat, pushed, django_capture_on_commit_callbacks
):
    order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    twin, twin_body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    no = order["order_no"]

    [answer], inner = deliver([body])

    assert inner.bodies == []  # Django was not asked
    _same(answer, django_notify(twin_body))  # Django's answer to a first delivery, byte for byte
    queued = QueuedNotification.objects.get()
    assert (queued.out_trade_no, queued.body) == (no, body.decode())
    assert queued.transaction_id == notifications.PAY_RESULT.read(body, {})[0]["transaction_id"]
    assert wakes(pushed) == 1
    assert Order.objects.get(order_no=no).status == "unpaid"  # not applied yet
    assert marker(no) is None
    assert outcomes() == ["applied"]  # the twin's, by Django

    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.notifications_queued_drain() == 1
    assert tasks.notifications_queued_drain() == 0  # a second wake-up finds nothing to do
    assert not QueuedNotification.objects.filter(pk=queued.pk).exists()

    assert Order.objects.get(order_no=no).status == "paid"
    payment = Payment.objects.get(out_trade_no=no)
    assert (payment.status, payment.transaction_id) == ("paid", queued.transaction_id)
    assert OrderEvent.objects.filter(order__order_no=no, to_status="paid").count() == 1
    assert FollowUp.objects.filter(order__order_no=no).count() == 3
    assert outcomes() == ["applied", "applied"]
    row = Notification.objects.order_by("id").last()
    assert (row.out_trade_no, row.body, row.total_fee) == (no, body.decode(), 12800)
    assert row.received_at == queued.received_at  # when WeChat's delivery arrived, not when it was applied
    assert not QueuedNotification.objects.exists()
    assert marker(no) is not None  # re-sent copies are the gate's from now on
    [again], inner = deliver([body])
    assert (again[0], again[2], inner.bodies) == (200, SUCCESS, [])
    assert notify_duplicates.notify_duplicates_record() == 1
    assert Counter(outcomes()) == {"applied": 2, "duplicate": 1}


def test_copies_of_a_queued_result_are_answered_and_recorded_once_each(buyer, make_sku, place_order, wechat, pushed):
    order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)

    answers, inner = deliver([body] * 5)  # five copies at once, before any apply

    assert [(a[0], a[2]) for a in answers] == [(200, SUCCESS)] * 5
    assert inner.bodies == []
    assert QueuedNotification.objects.count() == 1 and wakes(pushed) == 1
    assert notify_duplicates.notify_duplicates_record() == 4  # the copies' rows
    assert work() == 1
    assert Counter(outcomes()) == {"applied": 1, "duplicate": 4}
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"
    assert FollowUp.objects.filter(order__order_no=order["order_no"]).count() == 3


@pytest.mark.parametrize("case", ["other_amount", "unknown_out_trade_no", "closed", "queue_off", "not_utf8"])
def test_what_the_gate_cannot_queue_goes_to_django(buyer, make_sku, place_order, wechat, settings, pushed, case):
    order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    no = order["order_no"]
    txn = notifications.PAY_RESULT.read(body, {})[0]["transaction_id"]
    if case == "other_amount":  # signed, but not what we asked for: Django's FAIL
        body = signed_xml(pay_result(no, 1, transaction_id=txn))
    elif case == "unknown_out_trade_no":
        body = signed_xml(pay_result("20990101000000000000", 12800, transaction_id=txn))
    elif case == "closed":
        Payment.objects.filter(out_trade_no=no).update(status="closed")
    elif case == "queue_off":
        settings.NOTIFY_GATE_CONNECTIONS = 0
    elif case == "not_utf8":
        body = signed_xml(pay_result(no, 12800, transaction_id=txn, attach="caf\xe9")).replace(
            b"caf\xc3\xa9", b"caf\xe9"
        )
    [answer], inner = deliver([body])
    assert (answer, inner.bodies) == ((200, {}, b"django"), [body])
    assert not QueuedNotification.objects.exists() and wakes(pushed) == 0


def test_postgres_unreachable_means_django_answers_in_time(buyer, make_sku, place_order, wechat, monkeypatch):
    _, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    real = postgres.conninfo
    monkeypatch.setattr(postgres, "conninfo", lambda db, **kw: real({**db, "PORT": 1}, **kw))  # nothing listens
    t0 = time.monotonic()
    [answer], inner = deliver([body])
    assert (answer, inner.bodies) == ((200, {}, b"django"), [body])
    assert time.monotonic() - t0 < payment_notify.CONNECTION_WAIT_SECONDS + 3
    assert not QueuedNotification.objects.exists()


def test_a_full_backlog_sends_a_copy_of_a_queued_result_to_django(buyer, make_sku, place_order, wechat, monkeypatch):
    _, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    monkeypatch.setattr(notify_duplicates, "BACKLOG_MAX", 0)
    [first], inner = deliver([body])
    assert (first[2], inner.bodies) == (SUCCESS, [])
    [copy], inner = deliver([body])
    assert (copy, inner.bodies) == ((200, {}, b"django"), [body])
    assert QueuedNotification.objects.count() == 1


def test_a_redis_without_the_copy_script_still_records_the_copy(buyer, make_sku, place_order, wechat):
    _, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    deliver([body])
    get_redis_connection("default").script_flush()
    [copy], inner = deliver([body])
    assert (copy[2], inner.bodies) == (SUCCESS, [])
    assert notify_duplicates.notify_duplicates_record() == 1


def test_an_apply_that_fails_rolls_back_whole_and_the_sweep_applies_it_later(
    buyer, make_sku, place_order, wechat, monkeypatch
):
    from apps.payments import services

    order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    deliver([body])
    queued = QueuedNotification.objects.get()
    real = services.payment_apply_paid

    def broken(**kwargs):
        real(**kwargs)
        raise RuntimeError("worker lost its database mid-apply")

    monkeypatch.setattr(services, "payment_apply_paid", broken)
    assert notify_queue.queued_drain() == 0  # the error is logged, the row left for the sweep
    assert QueuedNotification.objects.filter(pk=queued.pk).exists()
    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"
    assert Notification.objects.count() == 0

    monkeypatch.setattr(services, "payment_apply_paid", real)
    assert notify_queue.queued_sweep() == 0  # too young: its own task may still be on its way
    assert notify_queue.queued_sweep(now=timezone.now() + dt.timedelta(seconds=notify_queue.SWEEP_AFTER_SECONDS)) == 1
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"
    assert outcomes() == ["applied"]
    assert not QueuedNotification.objects.exists()


def test_the_unpaid_timeout_before_the_apply_asks_wechat_and_pays_once(buyer, make_sku, place_order, wechat):
    """The result waits in the queue past the order's deadline: the unpaid timeout asks WeChat
    before closing (orderquery: paid) and applies it; the queued delivery is then the duplicate."""
    from apps.payments import order_lifecycle

    order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    deliver([body])
    order_row = Order.objects.get(order_no=order["order_no"])
    Order.objects.filter(pk=order_row.pk).update(pay_deadline=timezone.now() - dt.timedelta(seconds=1))
    order_lifecycle.order_expire(order_id=order_row.pk)
    assert Order.objects.get(pk=order_row.pk).status == "paid"
    assert work() == 1
    assert outcomes() == ["duplicate"]
    assert OrderEvent.objects.filter(order=order_row, to_status="paid").count() == 1
    assert FollowUp.objects.filter(order=order_row).count() == 3
    assert not QueuedNotification.objects.exists()


def test_racing_drains_share_the_rows_and_apply_each_once(
    buyer, make_sku, place_order, wechat, settings, no_conn_max_age
):
    from django.db import connection

    settings.MAX_UNPAID_ORDERS = 20
    orders = []
    for _ in range(5):
        order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
        orders.append(order["order_no"])
        deliver([body])
    results, barrier = [], threading.Barrier(6)

    def worker():
        barrier.wait()
        try:
            results.append(notify_queue.queued_drain())
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(results) == 5
    assert outcomes() == ["applied"] * 5
    assert OrderEvent.objects.filter(order__order_no__in=orders, to_status="paid").count() == 5
    assert FollowUp.objects.filter(order__order_no__in=orders).count() == 15
    assert not QueuedNotification.objects.exists()


def test_the_gate_and_orderquery_racing_pay_once(buyer, make_sku, place_order, wechat):
    """The customer's pay-status asks WeChat (orderquery) while the result waits in the queue:
    paid once; the queued delivery is then recorded as the duplicate Django would see."""
    order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    deliver([body])
    status = buyer.api.get(f"/api/v1/orders/{order['order_no']}/pay-status").json()
    assert status["order_status"] == "paid"
    assert work() == 1
    assert Counter(outcomes()) == {"duplicate": 1}
    assert OrderEvent.objects.filter(order__order_no=order["order_no"], to_status="paid").count() == 1
    assert FollowUp.objects.filter(order__order_no=order["order_no"]).count() == 3


def test_the_pushed_task_reaches_the_payments_queue(buyer, make_sku, place_order, wechat, monkeypatch, settings):
    """Not recorded this time: the real push, from the gate's thread, lands on the broker."""
    monkeypatch.undo()  # the real dispatch.push
    from celery import current_app

    _, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    queue = settings.CELERY_TASK_ROUTES["apps.payments.tasks.*"]["queue"]
    broker = current_app.connection_for_write()
    with broker.channel() as channel:
        before = channel.client.llen(queue)
    deliver([body])
    with broker.channel() as channel:
        after = channel.client.llen(queue)
        channel.client.delete(queue)
    broker.release()
    assert after == before + 1


def test_the_sweep_is_on_beats_schedule(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["notifications-queued-sweep"]
    assert entry["task"] == tasks.notifications_queued_sweep.name
    assert entry["schedule"] == settings.NOTIFY_QUEUE_SWEEP_SECONDS


def test_a_storm_through_the_gate_queues_each_result_once(buyer, make_sku, place_order, wechat, settings, pushed):
    settings.MAX_UNPAID_ORDERS = 20
    orders, bodies = [], []
    for _ in range(10):
        order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
        orders.append(order["order_no"])
        bodies.append(body)
    deliveries = [body for body in bodies for _ in range(3)]
    answers, inner = deliver(deliveries)
    assert [(a[0], a[2]) for a in answers] == [(200, SUCCESS)] * 30 and inner.bodies == []
    assert QueuedNotification.objects.count() == 10
    assert 1 <= wakes(pushed) <= 3  # the first at once, then one for the rows queued within WAKE_SECONDS, not ten
    assert notify_duplicates.notify_duplicates_record() == 20
    assert work() == 10
    assert Order.objects.filter(order_no__in=orders, status="paid").count() == 10
    assert Counter(FollowUp.objects.values_list("order__order_no", flat=True)) == {no: 3 for no in orders}
    assert Counter(outcomes()) == {"applied": 10, "duplicate": 20}
    assert Counter(Notification.objects.values_list("out_trade_no", flat=True)) == {no: 3 for no in orders}


def test_a_lone_result_wakes_the_worker_at_once_and_a_burst_within_the_interval_once_more(monkeypatch):
    gate = PaymentNotifyGate(Inner())
    times: list[float] = []
    monkeypatch.setattr(dispatch, "push", lambda task, *args, **options: times.append(time.monotonic()) or True)

    async def main():
        started = time.monotonic()
        gate._wake_worker()  # a lone first delivery
        await asyncio.sleep(0.03)
        for _ in range(5):  # a burst right after it
            gate._wake_worker()
            await asyncio.sleep(0.01)
        await asyncio.sleep(payment_notify.WAKE_SECONDS + 0.1)
        await gate.aclose()
        return started

    started = asyncio.run(main())
    assert len(times) == 2
    assert times[0] - started < 0.02  # at once
    assert times[1] - times[0] >= payment_notify.WAKE_SECONDS - 0.005  # the burst's one, an interval later


def test_the_wake_ups_go_out_from_one_warmed_thread_and_the_end_waits_for_them(monkeypatch):
    """The worker's start warms the wake-ups' one thread (a first publish in a new thread loads
    Celery's result backend); a wake-up under way at the worker's end is finished, not cut off."""
    names: list[tuple[str, str]] = []

    def push(task, *args, **options):
        time.sleep(0.2)
        names.append(("push", threading.current_thread().name))
        return True

    monkeypatch.setattr(dispatch, "push", push)
    monkeypatch.setattr(dispatch, "warm", lambda: names.append(("warm", threading.current_thread().name)))
    gate = PaymentNotifyGate(Inner())

    async def main():
        await gate.warm()
        gate._push()  # as the timer fires it: not awaited
        gate._push()
        await gate.aclose()

    asyncio.run(main())
    assert names == [("warm", "broker-push_0"), ("push", "broker-push_0"), ("push", "broker-push_0")]


def test_warm_loads_the_result_backend_in_the_calling_thread():
    from starmall.celery import app

    loaded = []

    def in_a_new_thread():
        before = hasattr(app._local, "backend")
        dispatch.warm()
        loaded.append((before, hasattr(app._local, "backend")))

    thread = threading.Thread(target=in_a_new_thread)
    thread.start()
    thread.join()
    assert loaded == [(False, True)]


def test_a_row_whose_apply_keeps_failing_never_holds_the_queue_and_raises_one_alert_when_stuck(
    buyer, make_sku, place_order, wechat, settings, monkeypatch
):
    from apps.alerts.models import Alert

    settings.MAX_UNPAID_ORDERS = 20
    bad, bad_body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    good, good_body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    deliver([bad_body])
    deliver([good_body])  # queued after the bad one: the drain meets the bad one first
    real = notifications.notification_handle

    def handle(callback, body, headers=None, **kwargs):
        if body == bad_body:
            raise RuntimeError("a bug met only by this row")
        return real(callback, body, headers, **kwargs)

    monkeypatch.setattr(notifications, "notification_handle", handle)
    assert notify_queue.queued_drain() == 1
    assert Order.objects.get(order_no=good["order_no"]).status == "paid"
    assert Order.objects.get(order_no=bad["order_no"]).status == "unpaid"
    assert list(QueuedNotification.objects.values_list("out_trade_no", flat=True)) == [bad["order_no"]]
    assert not Alert.objects.exists()  # young: the next sweep may still apply it

    later = timezone.now() + dt.timedelta(seconds=notify_queue.STUCK_AFTER_SECONDS + 1)
    assert notify_queue.queued_sweep(now=later) == 0
    assert notify_queue.queued_sweep(now=later) == 0
    alert = Alert.objects.get()  # one alert, however often the sweep finds it
    assert (alert.kind, bad["order_no"] in alert.title) == ("payment_manual", True)

    monkeypatch.setattr(notifications, "notification_handle", real)
    assert notify_queue.queued_sweep(now=later) == 1
    assert Order.objects.get(order_no=bad["order_no"]).status == "paid"
    assert Counter(outcomes()) == {"applied": 2}


def test_an_amount_changed_before_the_apply_is_recorded_refused_and_raises_an_alert(
    buyer, make_sku, place_order, wechat
):
    """WeChat heard SUCCESS and will not send it again: the apply's FAIL is an audit row
    (amount_mismatch, as Django would write) and an alert for staff, and the row is gone."""
    from apps.alerts.models import Alert

    order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    deliver([body])
    Payment.objects.filter(out_trade_no=order["order_no"]).update(total_fee=12700)
    assert work() == 1
    assert outcomes() == ["amount_mismatch"]
    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"
    alert = Alert.objects.get()
    assert alert.kind == "payment_manual" and order["order_no"] in alert.title
    assert not QueuedNotification.objects.exists()


def test_the_workers_start_opens_the_gates_connections_and_its_end_closes_them(settings):
    """ASGI lifespan on the shop's application: at start-up every gate connection is open
    (CREATE_GATE_CONNECTIONS + NOTIFY_GATE_CONNECTIONS on PostgreSQL, Redis pinged), at
    shut-down none is left."""
    from django.db import connection

    from starmall.asgi import application

    def gate_connections() -> dict[str, int]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT application_name, count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND application_name LIKE 'starmall-%%-gate' GROUP BY 1"
            )
            return dict(cursor.fetchall())

    settings.CREATE_GATE_CONNECTIONS, settings.NOTIFY_GATE_CONNECTIONS = 3, 2
    seen: dict[str, object] = {}

    async def main():
        inbox = asyncio.Queue()
        sent = []

        async def send(message):
            sent.append(message["type"])
            if message["type"] == "lifespan.startup.complete":
                seen["open"] = await asyncio.to_thread(gate_connections)
                await inbox.put({"type": "lifespan.shutdown"})

        await inbox.put({"type": "lifespan.startup"})
        await application({"type": "lifespan", "asgi": {"version": "3.0"}}, inbox.get, send)
        return sent

    assert asyncio.run(main()) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert seen["open"] == {"starmall-create-gate": 3, "starmall-notify-gate": 2}
    for _ in range(40):  # a closed connection's backend leaves pg_stat_activity a moment later
        if not gate_connections():
            break
        time.sleep(0.05)
    assert gate_connections() == {}


# --- first deliveries arriving together: one statement; their copies: one Redis script ---------


def _accept_now(items: list[tuple[str, str, str, str]]) -> list[tuple]:
    """``notify_queue.ACCEPT`` for ``items`` on a connection of its own, as the gate sends it."""
    import psycopg
    from django.db import connection

    from starmall.gates.postgres import conninfo

    with psycopg.connect(conninfo(connection.settings_dict, application_name="test"), autocommit=True) as conn:
        cursor = psycopg.ClientCursor(conn)
        cursor.execute(*notify_queue.accept_statement(items))
        return cursor.fetchall()


def test_one_statement_answers_each_result_as_its_own_statement_would(buyer, make_sku, place_order, wechat, settings):
    """A queued result, one arriving twice in the same statement (a copy that raced the queued
    marker), one already queued, another amount and an unknown out_trade_no: one row per result,
    the earliest item's body, and each item answered as if alone."""
    settings.MAX_UNPAID_ORDERS = 20
    (a, a_body), (b, b_body), (c, c_body), (d, d_body) = (
        _unpaid_at_wechat(buyer, make_sku, place_order, wechat) for _ in range(4)
    )

    def item(body: bytes, **change) -> tuple[str, str, str, str]:
        fields = {**notifications.PAY_RESULT.read(body, {})[0], **change}
        return notify_queue.accept_item(fields, body)

    [(c_id, _)] = _accept_now([item(c_body)])  # queued by an earlier statement
    answers = _accept_now(
        [
            item(a_body),
            item(b_body),
            item(c_body),
            item(b_body),
            item(d_body, total_fee="12700"),
            item(a_body, out_trade_no="20990101000000000000"),
        ]
    )

    rows = {row.out_trade_no: row for row in QueuedNotification.objects.all()}
    assert sorted(rows) == sorted([a["order_no"], b["order_no"], c["order_no"]])
    assert (rows[a["order_no"]].body, rows[b["order_no"]].body) == (a_body.decode(), b_body.decode())
    assert answers == [
        (rows[a["order_no"]].pk, True),  # queued
        (rows[b["order_no"]].pk, True),  # queued: the first of its two items
        (None, True),  # c: queued already (a copy)
        (None, True),  # b again: a copy of the row the second item queued
        (None, False),  # d: not the amount we asked for (Django's FAIL)
        (None, False),  # unknown out_trade_no (Django's)
    ]
    assert rows[c["order_no"]].pk == c_id


def test_first_deliveries_arriving_together_share_statements(buyer, make_sku, place_order, wechat, settings, pushed):
    settings.MAX_UNPAID_ORDERS = 20
    settings.NOTIFY_GATE_CONNECTIONS = 1
    bodies = [_unpaid_at_wechat(buyer, make_sku, place_order, wechat)[1] for _ in range(12)]
    gate = PaymentNotifyGate(Inner())
    statements = []
    real = gate._accept

    async def counted(conn, items):
        statements.append(len(items))
        return await real(conn, items)

    gate._accepts.run = counted

    answers, inner = deliver(bodies, gate=gate)

    assert [(a[0], a[2]) for a in answers] == [(200, SUCCESS)] * 12 and inner.bodies == []
    assert sum(statements) == 12 and len(statements) < 12  # one connection: the others waited together
    assert QueuedNotification.objects.count() == 12


def test_a_copy_of_a_queued_result_is_answered_by_the_queued_marker_alone(buyer, make_sku, place_order, wechat, pushed):
    order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    no = order["order_no"]
    deliver([body])
    fields = notifications.PAY_RESULT.read(body, {})[0]
    stored = get_redis_connection("default").get(notify_duplicates.queued_key(no))
    assert stored.decode() == notify_duplicates.applied_value(fields["transaction_id"], fields["total_fee"])
    assert 0 < get_redis_connection("default").ttl(notify_duplicates.queued_key(no)) <= 3600

    gate = PaymentNotifyGate(Inner())

    async def no_statement(item, wait_seconds):
        raise AssertionError("a copy with a queued marker needs no statement")

    gate._accepts.submit = no_statement
    [copy], inner = deliver([body], gate=gate)
    assert (copy[0], copy[2], inner.bodies) == (200, SUCCESS, [])
    assert notify_duplicates.notify_duplicates_record() == 1
    assert work() == 1
    assert Counter(outcomes()) == {"applied": 1, "duplicate": 1}


def test_another_amount_does_not_match_the_queued_marker(buyer, make_sku, place_order, wechat, pushed):
    """The marker names the result, not the order: a signed result for the same out_trade_no
    and transaction_id with another amount is not answered from it, and goes to Django."""
    order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    no = order["order_no"]
    deliver([body])
    fields = notifications.PAY_RESULT.read(body, {})[0]
    other_amount = signed_xml(pay_result(no, 12700, transaction_id=fields["transaction_id"]))
    [answer], inner = deliver([other_amount])
    assert (answer, inner.bodies) == ((200, {}, b"django"), [other_amount])
    assert notify_duplicates.notify_duplicates_record() == 0


def test_a_refused_apply_forgets_the_queued_marker_so_later_copies_go_to_django(
    buyer, make_sku, place_order, wechat, pushed
):
    order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    no = order["order_no"]
    deliver([body])
    assert get_redis_connection("default").get(notify_duplicates.queued_key(no)) is not None
    Payment.objects.filter(out_trade_no=no).update(total_fee=12700)
    assert work() == 1  # refused: amount_mismatch, an alert
    assert get_redis_connection("default").get(notify_duplicates.queued_key(no)) is None
    [copy], inner = deliver([body])
    assert (copy, inner.bodies) == ((200, {}, b"django"), [body])
