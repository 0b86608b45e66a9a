"""Attacks on the queued first delivery of a WeChat payment result (``apps.payments.notify_queue``
behind ``starmall.gates.payment_notify``).

The rule under attack: the gate answers SUCCESS to a first delivery only for what Django would
apply and answer SUCCESS, and only once its row is committed; the worker's later apply gives
exactly what Django's in-request apply gives (paid once, one "paid" event, 3 follow-ups, one
audit row per delivery once the duplicates' backlog is written), nothing half-written, never
money lost or applied twice. Where a case is judged "as Django would", a twin order gets the same
treatment through ``notifications.payment_notification_handle`` (what Django's view runs) and the
two are compared.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import threading
from collections import Counter

import psycopg
import pytest
from django.db import connection
from django.utils import timezone
from django_redis import get_redis_connection
from pay_helpers import API_KEY, pay_result, signed_xml
from redis.exceptions import ConnectionError as RedisConnectionError
from wechatpy.pay.utils import calculate_signature

from apps.alerts.models import Alert
from apps.orders.models import FollowUp, Order, OrderEvent
from apps.payments import notifications, notify_duplicates, notify_queue, services, wechat
from apps.payments.models import Notification, Payment, QueuedNotification, Refund
from starmall import dispatch
from starmall.gates import postgres
from starmall.gates.payment_notify import PaymentNotifyGate
from tests.orders.test_create_gate import _no_gate_connection_left  # noqa: F401 - an autouse fixture
from tests.orders.test_soldout_gate import Inner
from tests.payments.test_notify_gate import SUCCESS, marker, outcomes
from tests.payments.test_notify_queue import deliver, work

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

_TXN = itertools.count(1)


@pytest.fixture(autouse=True)
def pushed(monkeypatch):
    """The gate's wake-ups recorded, not sent: the tests run the worker when they choose."""
    sent: list[str] = []
    monkeypatch.setattr(dispatch, "push", lambda task, *args, **options: sent.append(task.name) or True)
    return sent


@pytest.fixture
def many(settings):
    settings.MAX_UNPAID_ORDERS = 50


@pytest.fixture
def no_conn_max_age(monkeypatch):
    """Threads open their own connections; each closes its own when done."""
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)


def txn() -> str:
    """A fresh WeChat transaction_id (28 digits, as WeChat's)."""
    return f"42000{next(_TXN):023d}"


def pending(buyer, make_sku, place_order, out_trade_no: str | None = None) -> Payment:
    """An unpaid order of 128.00 with its pending WeChat payment (``out_trade_no`` changed to the
    given one when set: the attacks on the statement need odd numbers in the table)."""
    order = place_order(buyer.api, items=[(make_sku(price_fen=12800, stock=5), 1)])
    assert (
        buyer.api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json").status_code
        == 200
    )
    payment = Payment.objects.get(order__order_no=order["order_no"], method="wechat")
    assert (payment.status, payment.total_fee) == ("pending", 12800)
    if out_trade_no is not None:
        Payment.objects.filter(pk=payment.pk).update(out_trade_no=out_trade_no)
        payment.refresh_from_db()
    return payment


def result(payment: Payment, transaction_id: str | None = None, **changes: str) -> bytes:
    """A signed payment result for ``payment`` (its amount unless changed)."""
    return signed_xml(
        pay_result(payment.out_trade_no, payment.total_fee, transaction_id=transaction_id or txn(), **changes)
    )


def raw_signed(signed: dict[str, str], raw: dict[str, str]) -> bytes:
    """A body whose signature is over ``signed`` (the fields as the reader strips them) while the
    XML carries ``raw``'s spelling of some of them (surrounding spaces)."""
    sign = calculate_signature(signed, API_KEY)
    fields = {**signed, **raw, "sign": sign}
    return ("<xml>" + "".join(f"<{k}><![CDATA[{v}]]></{k}>" for k, v in fields.items()) + "</xml>").encode()


def django(body: bytes) -> bytes:
    """Django's in-request handling of ``body`` (what its view runs); returns the answer body."""
    return notifications.payment_notification_handle(body)


def paid_once(payment: Payment, transaction_id: str) -> None:
    """The payment and its order are paid, once, with one "paid" event and 3 follow-ups."""
    payment.refresh_from_db()
    assert (payment.status, payment.transaction_id) == ("paid", transaction_id)
    assert Order.objects.get(pk=payment.order_id).status == "paid"
    assert OrderEvent.objects.filter(order_id=payment.order_id, to_status="paid").count() == 1
    assert FollowUp.objects.filter(order_id=payment.order_id).count() == 3
    assert not Refund.objects.filter(order_id=payment.order_id).exists()


def untouched(payment: Payment) -> None:
    """Nothing of the payment applied, nothing half-written."""
    payment.refresh_from_db()
    assert (payment.status, payment.transaction_id, payment.paid_at) == ("pending", None, None)
    assert Order.objects.get(pk=payment.order_id).status == "unpaid"
    assert not OrderEvent.objects.filter(order_id=payment.order_id, to_status="paid").exists()
    assert not FollowUp.objects.filter(order_id=payment.order_id).exists()
    assert marker(payment.out_trade_no) is None


def queue_off_gate(settings) -> PaymentNotifyGate:
    """A second "web node" whose gate does not queue (its pool sized 0), as with
    ``NOTIFY_GATE_CONNECTIONS=0`` on that process only."""
    settings.BREAKER_NOTIFY_GATE_OFF = 0
    gate = PaymentNotifyGate(Inner())
    gate._database = postgres.Database("notify-gate", "BREAKER_NOTIFY_GATE_OFF")
    gate._accepts = postgres.BatchQueue(gate._database, gate._accept, warn=gate.warn)
    return gate


def in_threads(*targets) -> list:
    """Run the callables at once (a barrier), each in a thread with its own connection; return
    their results (re-raising the first error)."""
    barrier = threading.Barrier(len(targets))
    results: list = [None] * len(targets)
    errors: list[BaseException] = []

    def one(i: int, target):
        try:
            barrier.wait()
            results[i] = target()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=one, args=(i, t)) for i, t in enumerate(targets)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    if errors:
        raise errors[0]
    return results


# --- what goes into the one statement -----------------------------------------------------------

ODD_NUMBERS = {
    "quote": "1';DELETE FROM payments_payment",
    "backslash": "2\\'\\\\x00\\",
    "dollars": "3$$; DROP TABLE x; $$$q$",
    "percent": "4%(body)s%s%%{}",
    "cjk": "5订单号「测试」",
    "emoji": "6😀👍🏽",
    "exactly_32": "7" * 32,
}


@pytest.mark.parametrize("case", sorted(ODD_NUMBERS))
def test_odd_out_trade_nos_are_stored_and_applied_verbatim(buyer, make_sku, place_order, case):
    """Quotes, backslashes, dollar quotes, %-placeholders, CJK, emoji, 32 characters: bound as
    values, never as SQL; the row holds the number as WeChat sent it and the worker applies it."""
    payment = pending(buyer, make_sku, place_order, out_trade_no=ODD_NUMBERS[case])
    number = txn()
    body = result(payment, number)

    [answer], inner = deliver([body])

    assert (answer[0], answer[2], inner.bodies) == (200, SUCCESS, [])
    row = QueuedNotification.objects.get()
    assert (row.out_trade_no, row.transaction_id, row.body) == (ODD_NUMBERS[case], number, body.decode())
    assert Payment.objects.count() == 1
    assert work() == 1
    paid_once(payment, number)
    assert outcomes() == ["applied"]
    assert Notification.objects.get().out_trade_no == ODD_NUMBERS[case]
    assert marker(ODD_NUMBERS[case]) is not None


ODD_FIELDS = {
    "attach_quotes": {"attach": "a'b\"c\\d$$e$f$%s%(x)s;--"},
    "attach_cjk_emoji": {"attach": "附加数据😀\U0001f9e7 ½"},
    "attach_xml_escapes": {"attach": "&lt;x&gt; &amp;amp;"},
    "transaction_id_quotes": {"transaction_id": "4200'); DROP TABLE x;--\\$$"},
    "transaction_id_cjk": {"transaction_id": "微信支付单号😀"},
    "extra_field_sql": {"device_info": "'; TRUNCATE payments_queuednotification; --"},
}


@pytest.mark.parametrize("case", sorted(ODD_FIELDS))
def test_odd_values_in_other_fields_are_stored_verbatim_and_applied(buyer, make_sku, place_order, case):
    payment = pending(buyer, make_sku, place_order)
    changes = dict(ODD_FIELDS[case])
    number = changes.pop("transaction_id", txn())
    body = result(payment, number, **changes)

    [answer], inner = deliver([body])

    assert (answer[2], inner.bodies) == (SUCCESS, [])
    row = QueuedNotification.objects.get()
    assert (row.transaction_id, row.body.encode()) == (number, body)
    assert work() == 1
    paid_once(payment, number)
    assert Notification.objects.get().body.encode() == body


def test_a_character_reference_to_a_lone_surrogate_or_nul_is_never_queued(buyer, make_sku, place_order):
    """``&#xD800;`` / ``&#0;`` are no XML characters: the reader refuses the body, Django answers."""
    payment = pending(buyer, make_sku, place_order)
    bodies = [
        result(payment, attach="x").replace(b"<![CDATA[x]]>", ref) for ref in (b"&#xD800;", b"&#0;", b"&#xDFFF;x")
    ]
    answers, inner = deliver(bodies)
    assert inner.bodies == bodies
    assert not QueuedNotification.objects.exists()
    assert all(b"malformed XML" in django(body) for body in bodies)
    untouched(payment)


def test_a_raw_nul_or_encoded_surrogate_in_the_body_is_never_queued(buyer, make_sku, place_order):
    payment = pending(buyer, make_sku, place_order)
    good = result(payment, attach="x")
    bodies = [good.replace(b"[x]", b"[\x00]"), good.replace(b"[x]", b"[\xed\xa0\x80]")]
    answers, inner = deliver(bodies)
    assert inner.bodies == bodies
    assert not QueuedNotification.objects.exists()
    untouched(payment)


# --- the amount, spelled every way ----------------------------------------------------------------


@pytest.mark.parametrize(
    "fee",
    ["012800", "12800.0", "+12800", "1.28e4", "12800 0", "１２８００", "-12800", "0", "9" * 300, "12800'--", "12800\\"],
)
def test_a_total_fee_spelled_otherwise_goes_to_django_which_refuses_it(buyer, make_sku, place_order, fee):
    """Django compares the text (``total_fee == str(payment.total_fee)``): every other spelling
    is its FAIL, so the gate must not queue it (nor fail on it: a huge number is text too)."""
    payment = pending(buyer, make_sku, place_order)
    body = result(payment, total_fee=fee)
    [answer], inner = deliver([body])
    assert (answer[2], inner.bodies) == (b"django", [body])
    assert not QueuedNotification.objects.exists()
    assert b"total_fee does not match" in django(body)
    assert outcomes() == ["amount_mismatch"]
    untouched(payment)


@pytest.mark.parametrize("raw", [" 12800", "12800 ", "\n12800\t", "\u300012800\u00a0"])
def test_a_total_fee_in_surrounding_whitespace_is_read_as_django_reads_it(buyer, make_sku, place_order, raw):
    """The reader strips a field's text, for Django and the gate alike: signed over "12800", the
    spaced spelling is a payment Django applies, so the gate may queue it."""
    payment = pending(buyer, make_sku, place_order)
    number = txn()
    fields = pay_result(payment.out_trade_no, 12800, transaction_id=number)
    body = raw_signed(fields, {"total_fee": raw})
    assert notifications.PAY_RESULT.read(body, {})[0]["total_fee"] == "12800"
    [answer], inner = deliver([body])
    assert (answer[2], inner.bodies) == (SUCCESS, [])
    assert work() == 1
    paid_once(payment, number)
    assert outcomes() == ["applied"]


def test_a_33_character_out_trade_no_goes_to_django(buyer, make_sku, place_order):
    payment = pending(buyer, make_sku, place_order)
    body = signed_xml(pay_result("8" * 33, 12800, transaction_id=txn()))
    [answer], inner = deliver([body])
    assert inner.bodies == [body] and not QueuedNotification.objects.exists()
    assert b"unknown out_trade_no" in django(body)
    untouched(payment)


# --- trusted fields Django refuses -----------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"appid": "wx0000000000000000"},
        {"mch_id": "1900000000"},
        {"result_code": "FAIL"},
        {"return_code": "FAIL"},
        {"transaction_id": "   "},
    ],
    ids=["appid", "mch_id", "result_code", "return_code", "blank_transaction_id"],
)
def test_a_signed_result_with_the_right_amount_but_foreign_fields_goes_to_django(buyer, make_sku, place_order, changes):
    payment = pending(buyer, make_sku, place_order)
    fields = pay_result(payment.out_trade_no, 12800, transaction_id=txn())
    if changes.get("transaction_id", "").isspace():
        body = raw_signed({**fields, "transaction_id": ""}, changes)
    else:
        body = signed_xml({**fields, **changes})
    [answer], inner = deliver([body])
    assert inner.bodies == [body] and not QueuedNotification.objects.exists()
    assert b"unexpected appid, mch_id or result" in django(body)
    untouched(payment)


def test_a_recharge_result_is_never_queued_even_for_a_payment_numbered_like_one(buyer, make_sku, place_order):
    """A recharge's "R..." number belongs to the recharge handler: Django's, whatever the tables hold."""
    payment = pending(buyer, make_sku, place_order, out_trade_no="R20261130000000000001")
    body = result(payment)
    [answer], inner = deliver([body])
    assert inner.bodies == [body] and not QueuedNotification.objects.exists()
    assert b"unknown out_trade_no" in django(body)  # the recharge handler finds no recharge
    untouched(payment)


# --- two results for one payment --------------------------------------------------------------------


def test_two_transaction_ids_for_one_payment_end_as_django_ends_them(buyer, make_sku, place_order, many):
    """WeChat should never, but if it signs two transactions for one out_trade_no: both queued
    (the queue is keyed by both numbers), the first applied, the second the duplicate Django
    records; the same as Django's two in-request applies on a twin."""
    payment, twin = (pending(buyer, make_sku, place_order) for _ in range(2))
    first, second = txn(), txn()
    answers, inner = deliver([result(payment, first)])
    answers2, inner2 = deliver([result(payment, second)])
    assert [a[2] for a in answers + answers2] == [SUCCESS, SUCCESS] and inner.bodies == inner2.bodies == []
    assert QueuedNotification.objects.count() == 2
    assert work() == 2
    paid_once(payment, first)
    queued_outcomes = outcomes()

    twin_first, twin_second = txn(), txn()
    assert django(result(twin, twin_first)) == SUCCESS
    assert django(result(twin, twin_second)) == SUCCESS
    paid_once(twin, twin_first)
    assert queued_outcomes == outcomes()[:2] == outcomes()[2:] == ["applied", "duplicate"]


# --- changes between the accept and the apply ------------------------------------------------------


def _cancel_without_wechat(payment: Payment) -> None:
    """The order cancelled and its payment closed (the unpaid timeout after a closeorder
    WeChat answered before the customer paid)."""
    Order.objects.filter(pk=payment.order_id).update(status="cancelled")
    Payment.objects.filter(pk=payment.pk).update(status="closed")


def test_an_order_cancelled_after_the_accept_is_a_late_payment_refunded_once_as_django_does(
    buyer, make_sku, place_order, many
):
    payment, twin = (pending(buyer, make_sku, place_order) for _ in range(2))
    number, twin_number = txn(), txn()
    deliver([result(payment, number)])
    _cancel_without_wechat(payment)
    _cancel_without_wechat(twin)

    assert work() == 1
    assert django(result(twin, twin_number)) == SUCCESS

    for p, n in ((payment, number), (twin, twin_number)):
        p.refresh_from_db()
        assert (p.status, p.transaction_id) == ("paid", n)  # the money is recorded
        assert Order.objects.get(pk=p.order_id).status == "cancelled"  # not revived
        refund = Refund.objects.get(order_id=p.order_id)
        assert (refund.reason, refund.refund_fen) == ("late_payment", 12800)
        assert not OrderEvent.objects.filter(order_id=p.order_id, to_status="paid").exists()
        assert not FollowUp.objects.filter(order_id=p.order_id).exists()
    assert outcomes() == ["late", "late"]
    assert not Alert.objects.filter(key__contains="refused").exists()  # SUCCESS, as WeChat heard
    assert not QueuedNotification.objects.exists()


def test_an_order_paid_from_the_balance_after_the_accept_refunds_the_wechat_money_once(
    buyer, make_sku, place_order, many
):
    """Paid another way meanwhile (forced here: the balance path would ask WeChat first): the
    queued result is a duplicate payment, refunded once, as Django's apply would."""
    payment, twin = (pending(buyer, make_sku, place_order) for _ in range(2))
    number, twin_number = txn(), txn()
    deliver([result(payment, number)])
    for p in (payment, twin):
        Order.objects.filter(pk=p.order_id).update(status="paid")
    assert work() == 1
    assert django(result(twin, twin_number)) == SUCCESS
    for p in (payment, twin):
        refund = Refund.objects.get(order_id=p.order_id)
        assert (refund.reason, refund.refund_fen) == ("duplicate_payment", 12800)
        assert Payment.objects.get(pk=p.pk).status == "paid"
    assert outcomes() == ["late", "late"]


def test_a_queued_result_applied_after_a_restart_of_the_amount_check_is_refused_not_half_applied(
    buyer, make_sku, place_order
):
    """The amount changes after the accept (the repricing path): the worker's apply refuses as
    Django would (amount_mismatch), writes nothing of the payment, raises one alert, and the row
    is gone (WeChat heard SUCCESS and will not send it again: staff act on the alert)."""
    payment = pending(buyer, make_sku, place_order)
    number = txn()
    deliver([result(payment, number)])
    Payment.objects.filter(pk=payment.pk).update(total_fee=12801)
    assert work() == 1
    payment.total_fee = 12801
    untouched(payment)
    assert outcomes() == ["amount_mismatch"]
    assert Alert.objects.filter(kind="payment_manual", key__endswith=f"{number}:refused").count() == 1
    assert not QueuedNotification.objects.exists()


# --- races -------------------------------------------------------------------------------------------


def test_the_worker_and_djangos_path_racing_on_one_payment_pay_once(
    buyer, make_sku, place_order, many, no_conn_max_age
):
    """One node queued the result; a copy reaches Django on a node whose gate does not queue;
    the worker drains at the same moment, several times over: paid once, two audit rows."""
    for _ in range(4):
        payment = pending(buyer, make_sku, place_order)
        number = txn()
        body = result(payment, number)
        deliver([body])
        answers = in_threads(lambda body=body: django(body), notify_queue.queued_drain, notify_queue.queued_drain)
        assert answers[0] == SUCCESS and sorted(answers[1:]) == [0, 1]
        paid_once(payment, number)
        assert Counter(
            Notification.objects.filter(out_trade_no=payment.out_trade_no).values_list("outcome", flat=True)
        ) == {
            "applied": 1,
            "duplicate": 1,
        }
        assert not QueuedNotification.objects.exists()


def test_many_copies_at_once_on_two_web_nodes_queue_once_and_leave_a_row_each(
    buyer, make_sku, place_order, settings, many, no_conn_max_age
):
    """Two gates (two processes, two event loops, two pools) take six copies each at once; a
    third node with the queue off passes its four to Django: one row queued, every delivery
    SUCCESS and exactly one audit row per delivery, the payment paid once."""
    payment = pending(buyer, make_sku, place_order)
    number = txn()
    body = result(payment, number)
    off = queue_off_gate(settings)

    (a, _), (b, _), (c, off_inner) = in_threads(
        lambda: deliver([body] * 6), lambda: deliver([body] * 6), lambda: deliver([body] * 4, gate=off)
    )

    assert [x[2] for x in a + b] == [SUCCESS] * 12
    assert [x[2] for x in c] == [b"django"] * 4
    assert QueuedNotification.objects.count() == 1
    assert [django(copy) for copy in off_inner.bodies] == [SUCCESS] * 4  # the first of them applies it
    assert notify_duplicates.notify_duplicates_record() == 11
    assert work() == 1
    paid_once(payment, number)
    assert Counter(outcomes()) == {"applied": 1, "duplicate": 15}


def test_copies_arriving_while_the_worker_holds_the_row_are_answered_and_the_killed_apply_leaves_nothing(
    buyer, make_sku, place_order, monkeypatch, no_conn_max_age
):
    """A drain is stopped inside the apply, after ``payment_apply_paid`` (the payment and order
    updated, the follow-ups written, not committed). Meanwhile a copy reaches the gate (answered
    at once: the row is only locked), a second drain finds nothing to take, and the worker dies:
    everything rolls back, no marker; the sweep then applies it once."""
    payment = pending(buyer, make_sku, place_order)
    number = txn()
    body = result(payment, number)
    deliver([body])
    real = services.payment_apply_paid
    inside, die = threading.Event(), threading.Event()

    def stopped(**kwargs):
        real(**kwargs)
        inside.set()
        assert die.wait(30)
        raise SystemExit("worker killed mid-apply")

    monkeypatch.setattr(services, "payment_apply_paid", stopped)
    outcome: list = []

    def drain():
        try:
            outcome.append(notify_queue.queued_drain())
        except BaseException as exc:  # noqa: BLE001 - the kill
            outcome.append(exc)
        finally:
            connection.close()

    worker = threading.Thread(target=drain)
    worker.start()
    try:
        assert inside.wait(30)
        [copy], inner = deliver([body])
        assert (copy[2], inner.bodies) == (SUCCESS, [])  # answered while the row is held
        assert QueuedNotification.objects.count() == 1
        monkeypatch.setattr(services, "payment_apply_paid", real)
        assert in_threads(notify_queue.queued_drain) == [0]  # SKIP LOCKED: nothing to take
        untouched(payment)  # nothing uncommitted is seen
    finally:
        die.set()
        worker.join(30)
    assert isinstance(outcome[0], SystemExit)

    untouched(payment)
    assert not Notification.objects.exists()
    assert QueuedNotification.objects.count() == 1
    assert notify_duplicates.notify_duplicates_record() == 1
    assert work() == 1
    paid_once(payment, number)
    assert Counter(outcomes()) == {"duplicate": 1, "applied": 1}


def test_an_apply_whose_audit_row_fails_rolls_back_whole_and_writes_no_marker(
    buyer, make_sku, place_order, monkeypatch
):
    """A drain that raises at the audit row (after the payment, the order, the follow-ups):
    rolled back whole, and the marker that would let the gate answer copies from Redis is not
    written (on_commit of a rolled-back transaction)."""
    payment = pending(buyer, make_sku, place_order)
    number = txn()
    deliver([result(payment, number)])
    real = notifications.Notification.record

    def broken(**kwargs):
        if kwargs["outcome"] == "applied":
            raise RuntimeError("database lost at the audit row")
        return real(**kwargs)

    monkeypatch.setattr(notifications.Notification, "record", broken)
    assert notify_queue.queued_drain() == 0  # logged, left for the sweep
    untouched(payment)
    assert not Notification.objects.exists() and QueuedNotification.objects.count() == 1
    monkeypatch.setattr(notifications.Notification, "record", real)
    assert notify_queue.queued_sweep() == 0  # too young
    assert work() == 1
    paid_once(payment, number)
    assert outcomes() == ["applied"]
    assert marker(payment.out_trade_no) is not None


def test_sweeps_on_two_machines_at_once_apply_each_row_once(buyer, make_sku, place_order, many, no_conn_max_age):
    payments, numbers = [], []
    for _ in range(8):
        payment = pending(buyer, make_sku, place_order)
        number = txn()
        deliver([result(payment, number)])
        payments.append(payment)
        numbers.append(number)
    assert sum(in_threads(work, work, work)) == 8
    for payment, number in zip(payments, numbers, strict=True):
        paid_once(payment, number)
    assert outcomes() == ["applied"] * 8
    assert not QueuedNotification.objects.exists()


def test_sweeps_on_two_machines_at_once_raise_one_stuck_alert(
    buyer, make_sku, place_order, monkeypatch, no_conn_max_age
):
    payment = pending(buyer, make_sku, place_order)
    body = result(payment)
    deliver([body])
    monkeypatch.setattr(
        notifications, "notification_handle", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("a bug"))
    )
    later = timezone.now() + dt.timedelta(seconds=notify_queue.STUCK_AFTER_SECONDS + 1)
    assert in_threads(*[lambda: notify_queue.queued_sweep(now=later)] * 3) == [0, 0, 0]
    assert Alert.objects.filter(key__endswith=":stuck").count() == 1
    untouched(payment)
    assert QueuedNotification.objects.count() == 1


# --- Redis and PostgreSQL failing -------------------------------------------------------------------


class _RedisDownForCopies(PaymentNotifyGate):
    """Redis answers the gate's marker script, then goes down before the copy's."""

    async def _copy(self, body):
        try:
            raise RedisConnectionError("Redis went away")
        except RedisConnectionError as exc:
            self.warn("Redis unavailable", exc)
            return None


def test_redis_down_after_the_row_was_committed_sends_the_copy_to_django(buyer, make_sku, place_order):
    payment = pending(buyer, make_sku, place_order)
    number = txn()
    body = result(payment, number)
    [first], inner = deliver([body])
    assert (first[2], inner.bodies) == (SUCCESS, [])
    # The copy raced the queued marker (or its SET failed): it finds the row, then Redis is gone.
    get_redis_connection("default").delete(notify_duplicates.queued_key(payment.out_trade_no))
    [copy], inner = deliver([body], gate=_RedisDownForCopies(Inner()))
    assert inner.bodies == [body]
    assert QueuedNotification.objects.count() == 1
    assert django(body) == SUCCESS  # Django applies the copy before the worker
    paid_once(payment, number)
    assert work() == 1  # the queued first delivery: now Django's duplicate
    paid_once(payment, number)
    assert outcomes() == ["applied", "duplicate"]
    assert notify_duplicates.notify_duplicates_record() == 0


def test_a_statement_that_fails_writes_nothing_and_leaves_the_pool_usable(
    buyer, make_sku, place_order, many, monkeypatch
):
    """A transaction_id longer than the column (let past ``accept_item``'s own check on purpose)
    fails the INSERT inside the statement: nothing is queued, Django answers it (and fails it
    too: never SUCCESS), and the next delivery on the same pool connection is queued as usual."""
    monkeypatch.setattr(notify_queue, "MAX_TRANSACTION_ID", 64)
    bad_payment, good_payment = (pending(buyer, make_sku, place_order) for _ in range(2))
    bad = result(bad_payment, "4" * 33)
    good_number = txn()
    good = result(good_payment, good_number)

    inner = Inner()
    gate = PaymentNotifyGate(inner)

    answers = asyncio.run(_sequential(gate, [bad, good]))
    assert [a[2] for a in answers] == [b"django", SUCCESS]
    assert inner.bodies == [bad]
    assert list(QueuedNotification.objects.values_list("transaction_id", flat=True)) == [good_number]
    with pytest.raises(Exception, match="too long"):
        django(bad)
    untouched(bad_payment)
    assert work() == 1
    paid_once(good_payment, good_number)


async def _sequential(gate: PaymentNotifyGate, bodies: list[bytes]) -> list[tuple[int, dict, bytes]]:
    """``bodies`` one after another through ``gate`` in this loop (one pool, one connection)."""
    from tests.payments.test_notify_gate import HEADERS

    out = []
    try:
        for body in bodies:
            scope = {
                "type": "http",
                "http_version": "1.1",
                "method": "POST",
                "path": "/api/v1/payments/wechat/notify",
                "scheme": "http",
                "query_string": b"",
                "headers": [
                    (k.lower().encode("latin-1"), v.encode("latin-1"))
                    for k, v in [*HEADERS.items(), ("Content-Length", str(len(body)))]
                ],
            }
            messages = [{"type": "http.request", "body": body, "more_body": False}]
            sent = []

            async def receive(messages=messages):
                return messages.pop(0) if messages else {"type": "http.disconnect"}

            async def send(message, sent=sent):
                sent.append(message)

            await gate(scope, receive, send)
            out.append((sent[0]["status"], {}, b"".join(m.get("body", b"") for m in sent[1:])))
    finally:
        await gate.aclose()
    return out


def test_a_statement_whose_answer_is_lost_after_its_commit_pays_once(buyer, make_sku, place_order, monkeypatch):
    """The connection drops after PostgreSQL committed the row but before the gate read the
    answer: the gate cannot know, Django answers and applies, and the worker's apply of the row
    is then the duplicate. The money is safe (paid once); the one delivery leaves two audit rows,
    as a Redis answer lost after its script ran does (``notify_duplicates``)."""
    payment = pending(buyer, make_sku, place_order)
    number = txn()
    body = result(payment, number)

    async def lost(self):
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    with monkeypatch.context() as patch:
        patch.setattr(psycopg.AsyncClientCursor, "fetchone", lost)
        patch.setattr(psycopg.AsyncClientCursor, "fetchall", lost)
        [answer], inner = deliver([body])
    assert inner.bodies == [body]
    assert QueuedNotification.objects.count() == 1  # committed all the same
    assert django(body) == SUCCESS
    assert work() == 1
    paid_once(payment, number)
    assert outcomes() == ["applied", "duplicate"]


def test_a_transaction_id_already_paying_another_payment_is_never_answered_success(buyer, make_sku, place_order, many):
    """Django cannot apply a result whose transaction_id already pays another payment (UNIQUE:
    its request fails, WeChat is not told SUCCESS). The gate must not answer SUCCESS for it
    either: WeChat would stop sending, and the worker could never apply the row."""
    paid, payment = (pending(buyer, make_sku, place_order) for _ in range(2))
    number = txn()
    assert django(result(paid, number)) == SUCCESS
    body = result(payment, number)
    with pytest.raises(Exception, match="duplicate key"):
        django(body)
    untouched(payment)

    [answer], inner = deliver([body])
    assert inner.bodies == [body]  # Django's, as before
    assert not QueuedNotification.objects.exists()


@pytest.mark.parametrize("time_end", ["00010101000000", "00010101235959", "99991231235959", "20261301000000", ""])
def test_an_odd_time_end_is_queued_only_when_django_applies_it(buyer, make_sku, place_order, many, time_end):
    """``time_end`` is WeChat's, read by the apply (``paid_at``): when Django's in-request apply
    of a twin fails on it, the gate must not have answered SUCCESS for it. "00010101000000" at
    UTC+8 is before year 1 in UTC, which PostgreSQL refuses: Django's apply failed on it (a
    500, WeChat sends again) while the gate queued it for a worker that could never apply it;
    such a time is now read as unreadable (paid_at: now), by Django and the worker alike."""
    payment, twin = (pending(buyer, make_sku, place_order) for _ in range(2))
    try:
        django_answer = django(result(twin, time_end=time_end))
    except Exception as exc:  # noqa: BLE001 - what Django's view would turn into a 500
        django_answer = exc
    number = txn()
    body = result(payment, number, time_end=time_end)
    [answer], inner = deliver([body])
    if django_answer != SUCCESS:
        assert (answer[2], inner.bodies) == (b"django", [body]), django_answer
        assert not QueuedNotification.objects.exists()
        return
    assert answer[2] == SUCCESS
    assert work() == 1
    paid_once(payment, number)
    paid_at = Payment.objects.get(pk=payment.pk).paid_at
    if wechat.parse_time_end(time_end) is None:  # unreadable or not storable: the moment it is applied
        assert abs(timezone.now() - paid_at) < dt.timedelta(minutes=1)
    else:
        assert paid_at == Payment.objects.get(pk=twin.pk).paid_at == wechat.parse_time_end(time_end)


def test_a_drain_whose_failed_row_another_drain_took_meanwhile_goes_on_without_raising(
    buyer, make_sku, place_order, monkeypatch, no_conn_max_age
):
    """Two drains (two machines' sweeps). Drain A's apply of the row raises and rolls back;
    before A has noted which row failed, drain B takes that same row (now free) and holds it
    while applying it. A must note its failed row and end normally (0 applied): it used to look
    the failed row up again as "the oldest one nobody holds", find none (B holds it) and raise
    the row's error out of the drain, skipping the sweep's stuck check (or, with other rows
    queued, note and skip a row that had not failed)."""
    payment = pending(buyer, make_sku, place_order)
    number = txn()
    deliver([result(payment, number)])
    real_handle, real_next = notifications.notification_handle, notify_queue._apply_next
    a_failed, b_holds, a_done = threading.Event(), threading.Event(), threading.Event()

    def handle(callback, body, headers=None, **kwargs):
        if threading.current_thread().name == "A":
            raise RuntimeError("a bug met by drain A only")
        b_holds.set()
        assert a_done.wait(30)
        return real_handle(callback, body, headers, **kwargs)

    def apply_next(*args, **kwargs):
        try:
            return real_next(*args, **kwargs)
        except Exception:
            if threading.current_thread().name == "A":  # rolled back: the row is free for B
                a_failed.set()
                assert b_holds.wait(30)
            raise

    monkeypatch.setattr(notifications, "notification_handle", handle)
    monkeypatch.setattr(notify_queue, "_apply_next", apply_next)
    results: dict[str, object] = {}

    def drain(name: str):
        try:
            if name == "B":
                assert a_failed.wait(30)
            results[name] = notify_queue.queued_drain()
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            results[name] = exc
        finally:
            if name == "A":
                a_done.set()
            connection.close()

    threads = [threading.Thread(target=drain, args=(name,), name=name) for name in ("A", "B")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == {"A": 0, "B": 1}
    paid_once(payment, number)
    assert outcomes() == ["applied"]
    assert not QueuedNotification.objects.exists()
