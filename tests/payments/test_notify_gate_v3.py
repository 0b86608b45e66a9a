"""The notify gate serving Pay API v3's payment notifications (``POST
/api/v1/payments/wechat/v3/notify``, ``starmall.gates.payment_notify``) as it serves v2's.

The same delivery goes to the gate and, through Django's test client, to the whole Django stack:
a copy of an applied payment and a first delivery (queued) are answered 204 exactly as Django
answers them; anything refused (forged, stale, wrong serial, tampered, another event, not JSON,
oversized, another amount, unknown) reaches Django with its body intact, and Django gives its
own 4xx. The queued row (the JSON body and its ``Wechatpay-*`` headers) is applied by the
worker through the same ``notification_handle`` table.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import threading
import time
import types
from collections import Counter

import pytest
from django.urls import reverse
from django.utils import timezone
from django_redis import get_redis_connection
from v3_helpers import envelope, headers_for, transaction

from apps.orders.models import FollowUp, Order, OrderEvent
from apps.payments import notifications, notify_duplicates, notify_queue, tasks, wechat_v3
from apps.payments.models import Notification, Payment, QueuedNotification
from starmall import dispatch
from starmall.gates import payment_notify, postgres
from starmall.gates.payment_notify import NOTIFY_PATH, V3_NOTIFY_PATH, PaymentNotifyGate
from tests.orders.test_create_gate import _no_gate_connection_left, run  # noqa: F401 - an autouse fixture
from tests.orders.test_soldout_gate import Inner, _same, call, django_answer
from tests.payments.test_notify_gate import _cache_at, _Shop, marker, outcomes

pytestmark = pytest.mark.django_db

HOST = {"Host": "127.0.0.1:8000", "Content-Type": "application/json"}
_numbers = iter(range(10**6))


@pytest.fixture
def v3_unpaid(buyer, make_sku, place_order, wechat, v3pay, settings):
    """``make()``: a goods order of 128.00 with a pending Pay API v3 payment: ``(out_trade_no,
    the transaction_id WeChat will report)``."""
    settings.MAX_UNPAID_ORDERS = 40

    def make() -> tuple[str, str]:
        order = place_order(buyer.api, items=[(make_sku(price_fen=12800, stock=5), 1)])
        answer = buyer.api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
        assert answer.status_code == 200
        assert Payment.objects.get(out_trade_no=order["order_no"]).api == "v3"
        return order["order_no"], f"42000099992026120{next(_numbers):011d}"

    return make


def notice(no: str, txn: str, total: int = 12800, **headers) -> tuple[bytes, dict]:
    """WeChat's v3 ``TRANSACTION.SUCCESS`` for ``no``: (body, request headers), newly signed."""
    body = envelope(transaction(no, total, transaction_id=txn))
    return body.encode(), {**HOST, **headers_for(body, **headers)}


def gate_call(body: bytes, headers: dict, gate: PaymentNotifyGate | None = None):
    """One delivery through ``gate`` in front of :class:`Inner`: (answer, the bodies that reached Django)."""
    inner = Inner()
    gate = gate or PaymentNotifyGate(inner)
    gate.app = inner
    return call(gate, body=body, headers=headers, path=V3_NOTIFY_PATH), inner.bodies


def django_v3(body: bytes, headers: dict):
    return django_answer(body, headers, path=V3_NOTIFY_PATH)


@pytest.fixture
def paid(v3_unpaid, django_capture_on_commit_callbacks, settings):
    """A v3 payment applied by Django (its marker written after the commit), queue off:
    ``(out_trade_no, transaction_id, body, headers)``."""
    settings.NOTIFY_GATE_CONNECTIONS = 0
    no, txn = v3_unpaid()
    body, headers = notice(no, txn)
    with django_capture_on_commit_callbacks(execute=True):
        assert django_v3(body, headers)[0] == 204
    assert outcomes() == ["applied"] and marker(no) is not None
    return no, txn, body, headers


def test_the_gates_v3_path_is_the_v3_notify_url():
    assert reverse("wechat-v3-notify") == V3_NOTIFY_PATH


def test_a_v3_copy_gets_djangos_answer_and_the_same_audit_row(paid):
    no, txn, _first, _ = paid
    body, headers = notice(no, txn)  # WeChat's copy: the same result, newly signed
    answer, reached = gate_call(body, headers)
    assert reached == []  # Django was not asked
    assert answer[0] == 204 and answer[2] == b""
    django = django_v3(body, headers)
    _same(answer, django)
    assert answer[1] == django[1]  # every header too
    assert outcomes() == ["applied", "duplicate"]  # Django's own row for its copy
    assert notify_duplicates.notify_duplicates_record() == 1  # beat: the gate's row
    djangos, gates = Notification.objects.order_by("id")[1:]
    keep = ("kind", "outcome", "body", "out_trade_no", "transaction_id", "total_fee")
    assert [getattr(gates, k) for k in keep] == [getattr(djangos, k) for k in keep]
    assert (gates.out_trade_no, gates.transaction_id, gates.total_fee) == (no, txn, 12800)
    assert json.loads(gates.body)["out_trade_no"] == no  # the decrypted resource, as Django keeps it
    assert OrderEvent.objects.filter(order__order_no=no, to_status="paid").count() == 1


def test_a_v2_body_on_the_v3_path_and_a_v3_body_on_the_v2_path_reach_django(paid):
    no, txn, _body, _ = paid
    body, headers = notice(no, txn)
    answer, reached = gate_call(body, headers)
    assert reached == []

    inner = Inner()
    v2 = call(PaymentNotifyGate(inner), body=body, headers=headers, path=NOTIFY_PATH)
    assert (v2, inner.bodies) == ((200, {}, b"django"), [body])
    assert notify_duplicates.notify_duplicates_record() == 1  # the v3 copy only


REFUSALS = {
    # case: (Django's status, its Chinese message or None for any, outcome of its audit row or None)
    "forged": (400, "签名验证失败"),
    "stale": (400, "签名验证失败"),
    "future": (400, "签名验证失败"),
    "serial": (400, "签名验证失败"),
    "tampered": (400, "通知内容无法解密"),
    "other_event": (400, "通知的 appid、商户号或支付结果不符"),
    "refund_event": (400, "通知的 appid、商户号或支付结果不符"),
    "not_json": (400, "通知内容无法解密"),
    "other_amount": (400, "订单金额不符"),
    "unknown_out_trade_no": (400, "商户订单号不存在"),
    "other_appid": (400, "通知的 appid、商户号或支付结果不符"),
    "no_headers": (400, "签名验证失败"),
    "over_64k": (413, "通知内容过大"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_anything_refused_reaches_django_intact_and_gets_its_4xx(paid, case):
    from cryptography.hazmat.primitives.asymmetric import rsa

    no, txn, _body, _ = paid
    now = int(time.time())

    def signed(resource, event_type="TRANSACTION.SUCCESS", **kw):
        body = envelope(resource, event_type=event_type)
        return body.encode(), {**HOST, **headers_for(body, **kw)}

    good = transaction(no, 12800, transaction_id=txn)
    body, headers = {
        "forged": lambda: signed(good, key=rsa.generate_private_key(public_exponent=65537, key_size=2048)),
        "stale": lambda: signed(good, timestamp=now - 6 * 60),
        "future": lambda: signed(good, timestamp=now + 6 * 60),
        "serial": lambda: signed(good, serial="PUB_KEY_ID_0000000000000000000000000000"),
        "tampered": lambda: _tampered(good),
        "other_event": lambda: signed(good, event_type="TRANSACTION.CLOSED"),
        "refund_event": lambda: signed(good, event_type="REFUND.SUCCESS"),
        "not_json": lambda: (b"<xml>no</xml>", {**HOST, **headers_for("<xml>no</xml>")}),
        "other_amount": lambda: signed(transaction(no, 1, transaction_id=txn)),
        "unknown_out_trade_no": lambda: signed(transaction("20990101000000000000", 12800, transaction_id=txn)),
        "other_appid": lambda: signed(transaction(no, 12800, transaction_id=txn, appid="wx0000000000000000")),
        "no_headers": lambda: (envelope(good).encode(), dict(HOST)),
        "over_64k": lambda: _padded(good, 70_000),
    }[case]()
    answer, reached = gate_call(body, headers)
    assert (answer, reached) == ((200, {}, b"django"), [body])  # to Django, body intact
    d_status, _head, payload = django_v3(body, headers)
    assert (d_status, json.loads(payload)["message"]) == REFUSALS[case]
    assert Payment.objects.get(out_trade_no=no).transaction_id == txn  # nothing changed
    assert notify_duplicates.notify_duplicates_record() == 0  # the gate recorded nothing


def _tampered(resource: dict) -> tuple[bytes, dict]:
    envelope_ = json.loads(envelope(resource))
    cipher = envelope_["resource"]["ciphertext"]
    envelope_["resource"]["ciphertext"] = ("A" if cipher[0] != "A" else "B") + cipher[1:]
    body = json.dumps(envelope_)
    return body.encode(), {**HOST, **headers_for(body)}  # signed over the changed body: decryption fails


def _signature_twice(resource: dict) -> tuple[bytes, list]:
    """The valid signature and a junk one: a2wsgi joins them, Django's verify fails."""
    body = envelope(resource)
    headers = {**HOST, **headers_for(body)}
    return body.encode(), [*headers.items(), ("Wechatpay-Signature", "AAAA")]


def _padded(resource: dict, size: int) -> tuple[bytes, dict]:
    padded = json.loads(envelope(resource))
    padded["padding"] = "x" * size
    body = json.dumps(padded)
    return body.encode(), {**HOST, **headers_for(body)}


def _django_pairs(body: bytes, pairs: list[tuple[str, str]]):
    """Django's answer to ``pairs`` (a repeated header joined with "," as a2wsgi joins it)."""
    joined: dict[str, str] = {}
    for name, value in pairs:
        joined[name] = f"{joined[name]},{value}" if name in joined else value
    return django_v3(body, joined)


def test_a_valid_copy_over_the_gates_limit_is_djangos_204(paid):
    no, txn, _body, _ = paid
    body, headers = _padded(transaction(no, 12800, transaction_id=txn), 9000)
    assert gate_call(body, headers) == ((200, {}, b"django"), [body])
    assert django_v3(body, headers)[0] == 204


def test_a_v3_recharge_is_never_the_gates(paid):
    body, headers = notice("R20261206000000000001", "4200009999202612060000000001")
    assert gate_call(body, headers)[1] == [body]


def test_with_the_queue_off_a_v3_first_delivery_reaches_django(v3_unpaid, settings):
    settings.NOTIFY_GATE_CONNECTIONS = 0
    no, txn = v3_unpaid()
    body, headers = notice(no, txn)
    assert gate_call(body, headers)[1] == [body]
    assert Order.objects.get(order_no=no).status == "unpaid" and marker(no) is None


def test_redis_unreachable_means_django_answers_a_v3_copy(paid, settings):
    no, txn, _body, _ = paid
    body, headers = notice(no, txn)
    _cache_at(settings, "redis://127.0.0.1:9/0")
    assert gate_call(body, headers)[1] == [body]
    assert django_v3(body, headers)[0] == 204


# --- first deliveries queued (PostgreSQL: the gate's own pool) ----------------------------------


@pytest.fixture
def pushed(monkeypatch):
    sent: list = []
    monkeypatch.setattr(dispatch, "push", lambda task, *args, **kw: sent.append(task.name) or True)
    return sent


def deliver(requests: list[tuple[bytes, dict]]):
    inner = Inner()
    gate = PaymentNotifyGate(inner)
    return run(gate, requests, path=V3_NOTIFY_PATH), inner


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_a_v3_first_delivery_is_queued_answered_as_django_and_applied_once(
    v3_unpaid, pushed, django_capture_on_commit_callbacks
):
    (no, txn), (twin, twin_txn) = v3_unpaid(), v3_unpaid()
    body, headers = notice(no, txn)

    [answer], inner = deliver([(body, headers)])

    assert inner.bodies == [] and answer[0] == 204
    _same(answer, django_v3(*notice(twin, twin_txn)))  # Django's answer to a first delivery
    queued = QueuedNotification.objects.get()
    assert (queued.out_trade_no, queued.transaction_id, queued.body) == (no, txn, body.decode())
    assert queued.headers == {k: v for k, v in headers.items() if k.startswith("Wechatpay-")}
    assert pushed.count(tasks.notifications_queued_drain.name) == 1  # the twin, applied by Django, pushed follow-ups
    assert Order.objects.get(order_no=no).status == "unpaid" and marker(no) is None

    with django_capture_on_commit_callbacks(execute=True):
        assert notify_queue.queued_drain() == 1
    assert not QueuedNotification.objects.exists()
    payment = Payment.objects.get(out_trade_no=no)
    assert (payment.status, payment.transaction_id, payment.total_fee) == ("paid", txn, 12800)
    assert Order.objects.get(order_no=no).status == "paid"
    assert OrderEvent.objects.filter(order__order_no=no, to_status="paid").count() == 1
    assert FollowUp.objects.filter(order__order_no=no).count() == 3
    twins, mine = Notification.objects.order_by("id")
    assert (mine.outcome, mine.out_trade_no, mine.transaction_id, mine.total_fee) == ("applied", no, txn, 12800)
    assert mine.received_at == queued.received_at
    assert json.loads(mine.body) == json.loads(twins.body) | {"out_trade_no": no, "transaction_id": txn}
    assert marker(no) is not None
    [again], inner = deliver([notice(no, txn)])  # a copy: the gate's, from Redis
    assert (again[0], again[2], inner.bodies) == (204, b"", [])


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_a_queued_v3_result_applied_after_the_5_minute_window_still_pays(v3_unpaid, pushed, monkeypatch):
    """The worker judges the signature's timestamp at the row's arrival (the gate verified it
    then): a row the sweep applies an hour late is WeChat's all the same."""
    no, txn = v3_unpaid()
    [answer], _ = deliver([notice(no, txn)])
    assert answer[0] == 204
    late = types.SimpleNamespace(time=lambda: time.time() + 3600)
    monkeypatch.setattr(wechat_v3, "time", late)
    assert notify_queue.queued_sweep(now=timezone.now() + dt.timedelta(hours=1)) == 1
    assert Payment.objects.get(out_trade_no=no).status == "paid"
    assert outcomes() == ["applied"]
    # The same stale headers sent to Django now: refused, as Django refuses a stale one.
    stale_body, stale_headers = notice(no, txn)
    assert django_v3(stale_body, stale_headers)[0] == 400


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_copies_of_a_queued_v3_result_are_answered_and_recorded_once_each(v3_unpaid, pushed):
    no, txn = v3_unpaid()
    answers, inner = deliver([notice(no, txn) for _ in range(5)])
    assert [(a[0], a[2]) for a in answers] == [(204, b"")] * 5 and inner.bodies == []
    assert QueuedNotification.objects.count() == 1
    assert notify_duplicates.notify_duplicates_record() == 4
    assert notify_queue.queued_drain() == 1
    assert Counter(outcomes()) == {"applied": 1, "duplicate": 4}
    assert Counter(Notification.objects.values_list("out_trade_no", "total_fee")) == {(no, 12800): 5}


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
@pytest.mark.parametrize("case", ["other_amount", "unknown_out_trade_no", "closed"])
def test_what_the_gate_cannot_queue_goes_to_django(v3_unpaid, pushed, case):
    no, txn = v3_unpaid()
    if case == "closed":
        Payment.objects.filter(out_trade_no=no).update(status="closed")
    body, headers = {
        "other_amount": lambda: notice(no, txn, total=1),
        "unknown_out_trade_no": lambda: notice("20990101000000000000", txn),
        "closed": lambda: notice(no, txn),
    }[case]()
    [answer], inner = deliver([(body, headers)])
    assert (answer, inner.bodies) == ((200, {}, b"django"), [body])
    assert not QueuedNotification.objects.exists() and pushed == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_postgres_unreachable_means_django_answers_a_v3_first_delivery(v3_unpaid, monkeypatch):
    no, txn = v3_unpaid()
    body, headers = notice(no, txn)
    real = postgres.conninfo
    monkeypatch.setattr(postgres, "conninfo", lambda db, **kw: real({**db, "PORT": 1}, **kw))
    t0 = time.monotonic()
    [answer], inner = deliver([(body, headers)])
    assert (answer, inner.bodies) == ((200, {}, b"django"), [body])
    assert time.monotonic() - t0 < payment_notify.CONNECTION_WAIT_SECONDS + 3
    assert not QueuedNotification.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_a_v3_storm_of_racing_copies_and_first_deliveries_pays_each_once(v3_unpaid, monkeypatch, settings):
    """Twelve v3 payments, each delivered four times (newly signed), shuffled, all at once
    through the shop's ASGI application (the gate, a2wsgi's threads, Django), while a thread
    posts one more copy of each straight to Django and the worker drains the queue meanwhile:
    every delivery 204, each payment paid once, one "paid" event, one set of follow-ups, one
    audit row per delivery once beat has flushed."""
    from django.db import connection
    from django.test import Client

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    monkeypatch.setattr(dispatch, "push", lambda *args, **kwargs: True)
    settings.NOTIFY_GATE_CONNECTIONS = 2
    payments = [v3_unpaid() for _ in range(12)]
    orders = [no for no, _txn in payments]
    deliveries = [notice(no, txn) for no, txn in payments for _ in range(4)]
    random.Random(3).shuffle(deliveries)
    direct = [notice(no, txn) for no, txn in payments]
    djangos: list[int] = []
    drained: list[int] = []
    done = threading.Event()

    def to_django() -> None:
        client = Client()
        for body, headers in direct:
            meta = {"HTTP_" + k.upper().replace("-", "_"): v for k, v in headers.items() if k.startswith("Wechatpay")}
            djangos.append(client.generic("POST", V3_NOTIFY_PATH, body, "application/json", **meta).status_code)
        connection.close()

    def worker() -> None:
        while not done.is_set():
            drained.append(notify_queue.queued_drain())
            time.sleep(0.005)
        connection.close()

    threads = [threading.Thread(target=to_django), threading.Thread(target=worker)]
    for thread in threads:
        thread.start()
    try:
        answers = run(_Shop(), deliveries, path=V3_NOTIFY_PATH)
    finally:
        threads[0].join()
        done.set()
        threads[1].join()

    assert [(status, body) for status, _h, body in answers] == [(204, b"")] * len(deliveries)
    assert djangos == [204] * len(direct)
    notify_queue.queued_sweep(now=timezone.now() + dt.timedelta(minutes=1))  # what the worker left
    assert not QueuedNotification.objects.exists()
    assert Order.objects.filter(order_no__in=orders, status="paid").count() == len(orders)
    assert {p.out_trade_no: p.transaction_id for p in Payment.objects.filter(out_trade_no__in=orders)} == dict(payments)
    assert OrderEvent.objects.filter(order__order_no__in=orders, to_status="paid").count() == len(orders)
    assert Counter(FollowUp.objects.values_list("order__order_no", flat=True)) == {no: 3 for no in orders}
    notify_duplicates.notify_duplicates_record()
    assert Counter(outcomes())["applied"] == len(orders)
    assert Counter(Notification.objects.values_list("out_trade_no", flat=True)) == {no: 5 for no in orders}
    assert Counter(Notification.objects.values_list("outcome", flat=True)) == {
        "applied": len(orders),
        "duplicate": 4 * len(orders),
    }


def test_the_v3_marker_is_the_v2_marker(paid):
    no, txn, _body, _ = paid
    raw = get_redis_connection("default").get(notify_duplicates.applied_key(no))
    assert raw.decode() == notify_duplicates.applied_value(txn, "12800")
    assert (
        notifications.handler_for(notifications.PAY_RESULT_V3, {"out_trade_no": no})
        is notifications.HANDLERS["payment"]
    )
