"""Attacks on the batched first deliveries (``postgres.BatchQueue`` behind ``starmall.gates.payment_notify``) and the
queued marker (``notify_duplicates.queued_key``) against the real PostgreSQL and Redis."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

import pytest
from django.db import connection
from django_redis import get_redis_connection

from apps.payments import notifications, notify_duplicates
from apps.payments.models import Payment, QueuedNotification
from starmall.gates.payment_notify import PaymentNotifyGate
from tests.orders.test_create_gate import _no_gate_connection_left  # noqa: F401 - an autouse fixture
from tests.orders.test_soldout_gate import Inner
from tests.payments import test_notify_queue_breaker as _breaker
from tests.payments.test_notify_gate import SUCCESS, outcomes
from tests.payments.test_notify_queue import deliver, work
from tests.payments.test_notify_queue_breaker import django, in_threads, paid_once, pending, result, txn, untouched

many, no_conn_max_age, pushed = (
    _breaker.many,
    _breaker.no_conn_max_age,
    _breaker.pushed,
)  # its fixtures (pushed: autouse)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def queued_marker(out_trade_no: str) -> bytes | None:
    return get_redis_connection("default").get(notify_duplicates.queued_key(out_trade_no))


def _item(body: bytes):
    from apps.payments import notify_queue

    return notify_queue.accept_item(notifications.PAY_RESULT.read(body, {})[0], body)


class _WorkerBetweenCommitAndMarker(PaymentNotifyGate):
    """A worker on another process takes the row and refuses it (the amount changed meanwhile)
    in the moment between the statement's commit and this gate's queued-marker SET: the SET task
    is created but the loop has not run it yet (a busy loop in a storm)."""

    def __init__(self, app, payment: Payment) -> None:
        super().__init__(app)
        self.payment = payment
        self.applied: list[int] = []

    async def _accept(self, conn, items):
        rows = await super()._accept(conn, items)  # committed; the marker task not yet run

        def other_worker():
            try:
                Payment.objects.filter(pk=self.payment.pk).update(total_fee=12700)
                self.applied.append(work())  # refused: amount_mismatch; forgets the marker on commit
            finally:
                connection.close()

        t = threading.Thread(target=other_worker)
        t.start()
        t.join(30)  # blocks this loop on purpose: the marker's SET cannot run before the refusal
        return rows


def test_a_refused_apply_before_the_queued_marker_is_set_leaves_no_marker(buyer, make_sku, place_order):
    """The apply refuses the row and deletes the queued marker; the gate's SET, not yet run,
    must not bring it back: a later copy of the refused result goes to Django (FAIL there), never
    SUCCESS with a 'duplicate' audit row."""
    payment = pending(buyer, make_sku, place_order)
    number = txn()
    body = result(payment, number)
    gate = _WorkerBetweenCommitAndMarker(Inner(), payment)

    [first], inner = deliver([body], gate=gate)
    assert (first[2], inner.bodies, gate.applied) == (SUCCESS, [], [1])
    assert not QueuedNotification.objects.exists()
    assert outcomes() == ["amount_mismatch"]
    payment.total_fee = 12700
    untouched(payment)

    [copy], inner = deliver([body])
    # Expected: Django judges the copy (FAIL: total_fee does not match). Found: the stale queued
    # marker answers SUCCESS and the backlog records a 'duplicate' of a payment never applied.
    assert (copy, inner.bodies) == ((200, {}, b"django"), [body])
    assert notify_duplicates.notify_duplicates_record() == 0
    assert queued_marker(payment.out_trade_no) is None


def _one_batch_gate(n: int, statements: list[int]) -> PaymentNotifyGate:
    """A gate whose ``n`` submits reach BatchQueue in one loop step each, after the pool exists:
    one connection takes all ``n`` in ONE statement (its size recorded in ``statements``)."""
    gate = PaymentNotifyGate(Inner())
    real_submit, real_run = gate._accepts.submit, gate._accepts.run
    arrived = {"n": 0}
    ready = asyncio.Event()

    async def submit(item, wait_seconds):
        await gate._database.pool()
        arrived["n"] += 1
        if arrived["n"] == n:
            ready.set()
        await ready.wait()
        return await real_submit(item, wait_seconds)

    async def run(conn, items):
        statements.append(len(items))
        return await real_run(conn, items)

    gate._accepts.submit, gate._accepts.run = submit, run
    return gate


def test_a_failing_statement_sends_its_whole_batch_to_django(buyer, make_sku, place_order, many, settings, monkeypatch):
    """A statement PostgreSQL refuses (here a transaction_id longer than the column, let through
    on purpose) writes nothing, and every result that shared it goes to Django, which applies the
    good ones (SUCCESS) and fails the bad one: no SUCCESS without a row."""
    from apps.payments import notify_queue

    monkeypatch.setattr(notify_queue, "MAX_TRANSACTION_ID", 64)
    settings.NOTIFY_GATE_CONNECTIONS = 1
    good, bad_payment, other = (pending(buyer, make_sku, place_order) for _ in range(3))
    good_number, other_number = txn(), txn()
    bodies = [result(good, good_number), result(bad_payment, "4" * 33), result(other, other_number)]
    statements: list[int] = []

    answers, inner = deliver(bodies, gate=_one_batch_gate(3, statements))

    assert statements == [3]
    assert [a[2] for a in answers] == [b"django"] * 3
    assert sorted(inner.bodies) == sorted(bodies)
    assert not QueuedNotification.objects.exists()
    assert django(bodies[0]) == SUCCESS and django(bodies[2]) == SUCCESS
    paid_once(good, good_number)
    paid_once(other, other_number)
    with pytest.raises(Exception, match="too long"):
        django(bodies[1])
    untouched(bad_payment)


def test_an_over_long_transaction_id_goes_to_django_alone_and_its_batch_mates_are_queued(
    buyer, make_sku, place_order, many, settings
):
    """WeChat's transaction_id has 32 characters: a longer one never reaches the statement (it
    would fail it for every result it carries); Django judges it, the others are queued."""
    settings.NOTIFY_GATE_CONNECTIONS = 1
    good, bad_payment, other = (pending(buyer, make_sku, place_order) for _ in range(3))
    good_number, other_number = txn(), txn()
    bodies = [result(good, good_number), result(bad_payment, "4" * 33), result(other, other_number)]
    statements: list[int] = []

    answers, inner = deliver(bodies, gate=_one_batch_gate(2, statements))  # the long one never submits

    assert statements == [2]
    assert [a[2] for a in answers] == [SUCCESS, b"django", SUCCESS]
    assert inner.bodies == [bodies[1]]
    assert QueuedNotification.objects.count() == 2
    assert work() == 2
    paid_once(good, good_number)
    paid_once(other, other_number)
    with pytest.raises(Exception, match="too long"):
        django(bodies[1])
    untouched(bad_payment)


def test_odd_items_in_one_batch_are_answered_each_as_alone(buyer, make_sku, place_order, many, settings):
    """One statement with: a good result, its copy, another amount, an unknown out_trade_no, a
    transaction_id already paying another payment: only the good one is queued, its copy is
    SUCCESS from the copy script, the others go to Django which refuses them."""
    settings.NOTIFY_GATE_CONNECTIONS = 1
    good, paid_other, victim, wrong = (pending(buyer, make_sku, place_order) for _ in range(4))
    good_number, used = txn(), txn()
    assert django(result(paid_other, used)) == SUCCESS  # `used` pays paid_other
    good_body = result(good, good_number)
    stolen = result(victim, used)  # WeChat-signed, but the number pays another payment
    bodies = [
        good_body,
        good_body,
        result(wrong, txn(), total_fee="12700"),
        result(wrong, txn(), out_trade_no="20990101000000000077"),
        stolen,
    ]
    statements: list[int] = []

    answers, inner = deliver(bodies, gate=_one_batch_gate(5, statements))

    assert statements == [5]
    assert [a[2] for a in answers] == [SUCCESS, SUCCESS, b"django", b"django", b"django"]
    assert sorted(inner.bodies) == sorted(bodies[2:])
    row = QueuedNotification.objects.get()
    assert (row.out_trade_no, row.transaction_id) == (good.out_trade_no, good_number)
    assert queued_marker(good.out_trade_no) is not None
    assert queued_marker(victim.out_trade_no) is None
    assert work() == 1
    paid_once(good, good_number)
    untouched(wrong)
    with pytest.raises(Exception, match="transaction_id"):  # Django's own request fails (UNIQUE), as documented
        django(stolen)
    victim.refresh_from_db()
    assert (victim.status, victim.transaction_id) == ("pending", None)
    assert notify_duplicates.notify_duplicates_record() == 1  # the copy's audit row


def test_two_gates_on_two_loops_racing_one_result_queue_it_once(buyer, make_sku, place_order, many, no_conn_max_age):
    """Two web workers (own loops, own pools) deliver the same result 3 times each at once:
    one row, every delivery SUCCESS, one audit row each in the end, paid once."""
    payment = pending(buyer, make_sku, place_order)
    number = txn()
    body = result(payment, number)

    def node():
        return deliver([body] * 3)

    (a, a_inner), (b, b_inner) = in_threads(node, node)
    assert [x[2] for x in a + b] == [SUCCESS] * 6
    assert a_inner.bodies == b_inner.bodies == []
    assert QueuedNotification.objects.count() == 1
    assert notify_duplicates.notify_duplicates_record() == 5
    assert work() == 1
    paid_once(payment, number)
    assert Counter(outcomes()) == {"applied": 1, "duplicate": 5}


class _RedisDownForMarkers(PaymentNotifyGate):
    async def _remember_queued(self, markers):
        class Down:
            def pipeline(self, transaction=False):
                raise ConnectionError("Redis went away")

        real = self.client
        self.client = lambda: Down()
        try:
            await super()._remember_queued(markers)
        finally:
            self.client = real


def test_redis_down_at_the_queued_marker_sends_copies_through_the_statement(buyer, make_sku, place_order):
    payment = pending(buyer, make_sku, place_order)
    number = txn()
    body = result(payment, number)
    [first], inner = deliver([body], gate=_RedisDownForMarkers(Inner()))
    assert (first[2], inner.bodies) == (SUCCESS, [])
    assert queued_marker(payment.out_trade_no) is None
    [copy], inner = deliver([body])  # no marker: the statement finds the row (ON CONFLICT): a copy
    assert (copy[2], inner.bodies) == (SUCCESS, [])
    assert QueuedNotification.objects.count() == 1
    assert work() == 1
    [late], inner = deliver([body])  # applied: the applied marker answers
    assert (late[2], inner.bodies) == (SUCCESS, [])
    assert notify_duplicates.notify_duplicates_record() == 2
    paid_once(payment, number)
    assert Counter(outcomes()) == {"applied": 1, "duplicate": 2}


def test_a_queued_marker_left_after_the_row_was_applied_answers_only_that_result(buyer, make_sku, place_order):
    """Row applied and deleted, the applied marker lost (Redis failed at the apply) while the
    queued marker remains: a copy is SUCCESS (truly applied), another amount goes to Django."""
    payment = pending(buyer, make_sku, place_order)
    number = txn()
    body = result(payment, number)
    deliver([body])
    assert work() == 1
    get_redis_connection("default").delete(notify_duplicates.applied_key(payment.out_trade_no))
    assert queued_marker(payment.out_trade_no) is not None
    other = result(payment, number, total_fee="12700")
    [copy, odd], inner = deliver([body, other])
    assert (copy[2], odd[2], inner.bodies) == (SUCCESS, b"django", [other])
    paid_once(payment, number)
