"""The notify gate in front of Django (``starmall.gates.payment_notify``) and the markers and
audit backlog behind it (``apps.payments.notify_duplicates``).

The gate may answer a payment notification only with the answer Django itself gives: these
tests send the same delivery to the gate and, through Django's test client, to the whole Django
stack, and compare status, headers and body byte for byte. Everything else must reach Django
with its body intact, and Django's answer to it stays what it was. Every delivery still leaves
one ``Notification`` row: the gate's duplicates get theirs from beat's flush.
"""

from __future__ import annotations

import datetime as dt
import random
import socket
import time
from collections import Counter

import pytest
from django.urls import reverse
from django_redis import get_redis_connection
from pay_helpers import pay_result, signed_xml

from apps.orders.models import FollowUp, Order, OrderEvent
from apps.payments import notifications, notify_duplicates
from apps.payments.models import Notification, Payment
from starmall.gates.payment_notify import MAX_BODY, NOTIFY_PATH, PaymentNotifyGate
from tests.orders.test_create_gate import run
from tests.orders.test_soldout_gate import Inner, _same, call, django_answer

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _queue_off(settings):
    """These tests are about the copies of applied payments: first deliveries go to Django as
    with ``NOTIFY_GATE_CONNECTIONS=0`` (the queue is tests/payments/test_notify_queue.py's; the
    storm below turns it on)."""
    settings.NOTIFY_GATE_CONNECTIONS = 0


SUCCESS = b"<xml><return_code><![CDATA[SUCCESS]]></return_code><return_msg><![CDATA[OK]]></return_msg></xml>"
HEADERS = {"Host": "127.0.0.1:8000", "Content-Type": "text/xml"}


def gate_call(body: bytes, headers=None, gate: PaymentNotifyGate | None = None, **kwargs):
    """One delivery through ``gate`` (by default a new PaymentNotifyGate) in front of :class:`Inner`:
    (answer, the bodies that reached Django)."""
    inner = Inner()
    if gate is None:
        gate = PaymentNotifyGate(inner)
    gate.app = inner
    answer = call(gate, body=body, headers=HEADERS if headers is None else headers, path=NOTIFY_PATH, **kwargs)
    return answer, inner.bodies


def django_notify(body: bytes, headers=None, secure=False):
    return django_answer(body, HEADERS if headers is None else headers, secure=secure, path=NOTIFY_PATH)


def outcomes() -> list[str]:
    return list(Notification.objects.order_by("id").values_list("outcome", flat=True))


def marker(out_trade_no: str) -> bytes | None:
    return get_redis_connection("default").get(notify_duplicates.applied_key(out_trade_no))


@pytest.fixture
def paid(buyer, make_sku, place_order, wechat, django_capture_on_commit_callbacks):
    """A goods order of 128.00 paid at WeChat, its first notification applied by Django (the
    marker written after commit): ``(order JSON, notification body)``."""
    order = place_order(buyer.api, items=[(make_sku(price_fen=12800, stock=5), 1)])
    assert (
        buyer.api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json").status_code
        == 200
    )
    wechat.control.pay(order["order_no"])
    body = wechat.control.notifications(out_trade_no=order["order_no"])[0]["body"].encode()
    with django_capture_on_commit_callbacks(execute=True):
        assert django_notify(body)[2] == SUCCESS
    assert outcomes() == ["applied"]
    return order, body


def _unpaid_at_wechat(buyer, make_sku, place_order, wechat):
    order = place_order(buyer.api, items=[(make_sku(price_fen=12800, stock=5), 1)])
    buyer.api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])
    return order, wechat.control.notifications(out_trade_no=order["order_no"])[0]["body"].encode()


# --- the answer -------------------------------------------------------------------------------


def test_the_gates_path_is_the_notify_url():
    assert reverse("wechat-notify") == NOTIFY_PATH


def test_a_duplicate_gets_djangos_answer_byte_for_byte(paid):
    order, body = paid
    answer, reached = gate_call(body)
    assert reached == []  # Django was not asked
    assert answer[0] == 200 and answer[2] == SUCCESS
    django = django_notify(body)
    assert django[2] == SUCCESS
    _same(answer, django)
    assert outcomes() == ["applied", "duplicate"]  # Django's own row for its duplicate
    assert notify_duplicates.notify_duplicates_record() == 1  # beat: the gate's row
    assert outcomes() == ["applied", "duplicate", "duplicate"]
    row = Notification.objects.order_by("id").last()
    payment = Payment.objects.get(out_trade_no=order["order_no"])
    assert (row.kind, row.out_trade_no, row.transaction_id, row.total_fee) == (
        "payment",
        order["order_no"],
        payment.transaction_id,
        12800,
    )
    assert row.body == body.decode()  # kept whole, as Django keeps it


def test_behind_an_https_proxy_with_hsts_the_answer_still_matches_django(paid, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 3600
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_REFERRER_POLICY = "same-origin, strict-origin"
    _, body = paid
    assert gate_call(body)[1] == [body]  # plain http: Django redirects, the gate leaves it to Django
    forwarded = {**HEADERS, "X-Forwarded-Proto": "https", "Accept": "*/*"}
    answer, reached = gate_call(body, forwarded)
    assert reached == [] and "strict-transport-security" in answer[1]
    _same(answer, django_notify(body, forwarded))


def test_a_resend_with_other_optional_fields_is_still_a_duplicate(paid):
    """WeChat's copies need not be byte-identical (nonce, optional fields): the marker is about
    out_trade_no, transaction_id and total_fee, under a valid signature."""
    order, _ = paid
    payment = Payment.objects.get(out_trade_no=order["order_no"])
    body = signed_xml(pay_result(order["order_no"], 12800, transaction_id=payment.transaction_id, nonce_str="other"))
    answer, reached = gate_call(body)
    assert reached == []
    _same(answer, django_notify(body))


def test_the_shops_asgi_application_answers_a_duplicate_without_a_query(paid, django_assert_num_queries):
    from starmall.asgi import application

    _, body = paid
    with django_assert_num_queries(0):
        status, _head, payload = call(application, body=body, headers=HEADERS, path=NOTIFY_PATH)
    assert (status, payload) == (200, SUCCESS)


# --- what goes to Django ------------------------------------------------------------------------


def test_with_the_queue_off_a_first_delivery_reaches_django(buyer, make_sku, place_order, wechat):
    order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    assert gate_call(body)[1] == [body]
    assert marker(order["order_no"]) is None
    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"


@pytest.mark.parametrize(
    "case, fail",
    [
        ("forged_signature", "bad signature"),
        ("other_amount", "total_fee does not match"),
        ("other_transaction_id", None),  # Django: SUCCESS, "already paid by ..." logged, nothing changes
        ("unknown_out_trade_no", "unknown out_trade_no"),
        ("other_appid", "unexpected appid, mch_id or result"),
        ("result_fail", "unexpected appid, mch_id or result"),
        ("malformed", "malformed XML"),
        ("truncated", "malformed XML"),
        ("nested", "malformed XML"),
        ("field_twice", "malformed XML"),
        ("entity_bomb", "malformed XML"),
        ("external_entity", "malformed XML"),
        ("empty", "malformed XML"),  # Content-Length 0: not even read by the gate
    ],
)
def test_anything_but_a_recorded_duplicate_reaches_django_and_gets_its_answer(paid, case, fail):
    order, body = paid
    payment = Payment.objects.get(out_trade_no=order["order_no"])
    no, txn = order["order_no"], payment.transaction_id
    bodies = {
        "forged_signature": lambda: signed_xml(pay_result(no, 12800, transaction_id=txn), key="0" * 32),
        "other_amount": lambda: signed_xml(pay_result(no, 1, transaction_id=txn)),
        "other_transaction_id": lambda: signed_xml(
            pay_result(no, 12800, transaction_id="4200009999202612019999999999")
        ),
        "unknown_out_trade_no": lambda: signed_xml(pay_result("20990101000000000000", 12800, transaction_id=txn)),
        "other_appid": lambda: signed_xml(pay_result(no, 12800, transaction_id=txn, appid="wx0000000000000000")),
        "result_fail": lambda: signed_xml(pay_result(no, 12800, transaction_id=txn, result_code="FAIL")),
        "malformed": lambda: b"not xml at all",
        "truncated": lambda: body[:-7],
        "nested": lambda: body.replace(b"<xml>", b"<xml><a><b>1</b></a>"),
        "field_twice": lambda: body.replace(b"</xml>", b"<total_fee>12800</total_fee></xml>"),
        "entity_bomb": lambda: (
            b'<!DOCTYPE xml [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
            b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><xml><return_code>&c;</return_code></xml>'
        ),
        "external_entity": lambda: (
            b'<?xml version="1.0"?><!DOCTYPE xml [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
            b"<xml><return_code>&x;</return_code></xml>"
        ),
        "empty": lambda: b"",
    }
    sent = bodies[case]()
    answer, reached = gate_call(sent)
    assert (answer, reached) == ((200, {}, b"django"), [sent])  # to Django, body intact
    before = Notification.objects.count()
    status, _head, payload = django_notify(sent)
    assert status == 200
    assert payload == (SUCCESS if fail is None else notifications.PAY_RESULT.fail(fail))
    assert Notification.objects.count() <= before + 1  # one row (or one count for junk) per delivery
    assert Order.objects.get(order_no=no).status == "paid"
    assert notify_duplicates.notify_duplicates_record() == 0  # the gate recorded nothing


@pytest.mark.parametrize(
    "case",
    [
        "query_string",
        "other_path",
        "trailing_slash",
        "transfer_notify",
        "get",
        "chunked",
        "oversized",
        "host_not_allowed",
        "accept_xml",
        "underscore_header",
        "twice_host",
        "disallowed_user_agent",
    ],
)
def test_a_duplicate_the_gate_cannot_answer_exactly_goes_to_django(paid, case, settings):
    import re

    _, body = paid
    headers, kwargs = dict(HEADERS), {}
    if case == "query_string":
        kwargs["query_string"] = b"format=xml"
    elif case == "other_path":
        kwargs["path"] = "/api/v1/payments/wechat/refund-notify"
    elif case == "trailing_slash":
        kwargs["path"] = NOTIFY_PATH + "/"
    elif case == "transfer_notify":
        kwargs["path"] = "/api/v1/payments/wechat/transfer-notify"
    elif case == "get":
        kwargs["method"] = "GET"
    elif case == "chunked":
        kwargs.update(content_length=False, chunks=3)
    elif case == "oversized":
        body = body.replace(b"</xml>", b" " * MAX_BODY + b"</xml>")
    elif case == "host_not_allowed":
        headers["Host"] = "evil.example.com"
    elif case == "accept_xml":
        headers["Accept"] = "text/xml"
    elif case == "underscore_header":
        headers["X_Forwarded_Proto"] = "https"
    elif case == "disallowed_user_agent":
        settings.DISALLOWED_USER_AGENTS = [re.compile("Mozilla")]
        headers["User-Agent"] = "Mozilla/4.0"
    inner = Inner()
    gate = PaymentNotifyGate(inner)
    if case == "twice_host":
        answer = call(gate, body=body, headers=[*headers.items(), ("Host", "evil.example.com")], path=NOTIFY_PATH)
    else:
        answer = call(gate, body=body, headers=headers, **{"path": NOTIFY_PATH, **kwargs})
    assert answer == (200, {}, b"django")
    assert inner.bodies == [body]
    assert notify_duplicates.notify_duplicates_record() == 0


def test_a_recharge_number_is_never_the_gates(make_customer, make_api, wechat):
    """Recharges share the URL (out_trade_no "R..."): the "recharge" handler claims them and no
    marker is written for them; even a marker planted for one is not believed."""
    from apps.payments.models import RechargePackage

    customer = make_customer()
    package = RechargePackage.objects.create(pay_fen=10000, bonus_fen=1000, sort=1)
    no = make_api(customer).post("/api/v1/recharges", {"package_id": package.pk}, format="json").json()["recharge_no"]
    wechat.control.pay(no)
    note = wechat.control.notifications(out_trade_no=no)[0]
    body = note["body"].encode()
    fields = notifications.PAY_RESULT.read(body, {})[0]
    notify_duplicates.applied_remember(
        out_trade_no=no, transaction_id=fields["transaction_id"], total_fee=int(fields["total_fee"])
    )
    assert gate_call(body)[1] == [body]


def test_a_full_backlog_sends_duplicates_to_django(paid, monkeypatch):
    _, body = paid
    monkeypatch.setattr(notify_duplicates, "BACKLOG_MAX", 1)
    assert gate_call(body)[1] == []
    assert gate_call(body)[1] == [body]  # beat has not written the first one's row yet
    assert notify_duplicates.notify_duplicates_record() == 1
    assert gate_call(body)[1] == []


def test_a_redis_that_lost_the_script_still_answers(paid):
    _, body = paid
    get_redis_connection("default").script_flush()
    answer, reached = gate_call(body)
    assert (answer[2], reached) == (SUCCESS, [])


def _copies_at_once(body: bytes, count: int, gate: PaymentNotifyGate) -> list[tuple[int, bytes]]:
    """``count`` deliveries of ``body`` read in one turn of one event loop, as a worker reads a storm."""
    return [(status, payload) for status, _headers, payload in run(gate, [(body, HEADERS)] * count, path=NOTIFY_PATH)]


def test_copies_read_together_are_answered_from_one_pipeline(paid, redis_pipelines):
    _, body = paid
    gate = PaymentNotifyGate(Inner())
    assert _copies_at_once(body, 20, gate) == [(200, SUCCESS)] * 20
    assert gate.app.bodies == []
    assert redis_pipelines == [20]  # one write, twenty answers
    assert notify_duplicates.notify_duplicates_record() == 20
    assert outcomes() == ["applied"] + ["duplicate"] * 20


def test_each_copy_in_a_pipeline_gets_its_own_answer(paid, redis_pipelines, monkeypatch):
    """A backlog with room for three: of five copies read together, three are answered by the
    gate and recorded, two reach Django."""
    _, body = paid
    monkeypatch.setattr(notify_duplicates, "BACKLOG_MAX", 3)
    gate = PaymentNotifyGate(Inner())
    answers = _copies_at_once(body, 5, gate)
    assert Counter(answers) == {(200, SUCCESS): 3, (200, b"django"): 2}
    assert gate.app.bodies == [body, body]
    assert redis_pipelines == [5]
    assert notify_duplicates.notify_duplicates_record() == 3


def test_a_redis_that_lost_the_script_answers_copies_read_together(paid, redis_pipelines):
    _, body = paid
    get_redis_connection("default").script_flush()
    gate = PaymentNotifyGate(Inner())
    assert _copies_at_once(body, 4, gate) == [(200, SUCCESS)] * 4
    assert redis_pipelines == [4, 4]  # EVALSHA refused, then EVAL
    assert notify_duplicates.notify_duplicates_record() == 4


# --- Redis in trouble --------------------------------------------------------------------------


def _cache_at(settings, location: str) -> None:
    settings.CACHES = {**settings.CACHES, "default": {**settings.CACHES["default"], "LOCATION": location}}


def test_redis_unreachable_means_django_answers_with_one_warning(paid, settings, caplog):
    _, body = paid
    _cache_at(settings, "redis://127.0.0.1:9/0")
    gate = PaymentNotifyGate(Inner())  # one per worker process
    with caplog.at_level("WARNING", logger="starmall.gates.payment_notify"):
        for _ in range(5):
            assert gate_call(body, gate=gate)[1] == [body]
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == ["notify gate: Redis unavailable"]


@pytest.fixture
def hung_redis(settings):
    """The cache's Redis is a server that accepts connections and never answers (a hung Redis)."""
    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(16)  # the kernel completes the handshakes; nobody ever reads or writes
    _cache_at(settings, f"redis://127.0.0.1:{hung.getsockname()[1]}/0")
    yield
    hung.close()


def test_a_redis_that_does_not_answer_means_django_answers_quickly(paid, hung_redis):
    """The gate gives up after its timeout and Django answers."""
    _, body = paid
    started = time.monotonic()
    assert gate_call(body)[1] == [body]
    assert time.monotonic() - started < 2


def test_a_hung_redis_sends_copies_read_together_to_django_quickly(paid, hung_redis):
    _, body = paid
    gate = PaymentNotifyGate(Inner())
    started = time.monotonic()
    assert _copies_at_once(body, 10, gate) == [(200, b"django")] * 10
    assert time.monotonic() - started < 2
    assert gate.app.bodies == [body] * 10


# --- the marker ---------------------------------------------------------------------------------


def test_the_marker_is_written_after_the_commit_and_not_before(
    buyer, make_sku, place_order, wechat, django_capture_on_commit_callbacks
):
    order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert notifications.payment_notification_handle(body) == SUCCESS
    assert marker(order["order_no"]) is None  # not before the commit
    assert gate_call(body)[1] == [body]
    for callback in callbacks:
        callback()
    payment = Payment.objects.get(out_trade_no=order["order_no"])
    assert marker(order["order_no"]).decode() == notify_duplicates.applied_value(payment.transaction_id, "12800")
    assert (
        0
        < get_redis_connection("default").ttl(notify_duplicates.applied_key(order["order_no"]))
        <= (notify_duplicates.APPLIED_TTL_SECONDS)
    )
    assert gate_call(body)[1] == []


def test_a_rolled_back_payment_leaves_no_marker(
    buyer, make_sku, place_order, wechat, django_capture_on_commit_callbacks, monkeypatch
):
    order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    real = Notification.record.__func__

    def record(cls, **kwargs):
        if kwargs["outcome"] == "applied":
            raise RuntimeError("killed at the audit row")
        return real(cls, **kwargs)

    monkeypatch.setattr(Notification, "record", classmethod(record))
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError):
            notifications.payment_notification_handle(body)
    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"
    assert marker(order["order_no"]) is None
    assert gate_call(body)[1] == [body]


def test_a_redis_failure_at_the_marker_leaves_duplicates_to_django(
    buyer, make_sku, place_order, wechat, django_capture_on_commit_callbacks, monkeypatch, caplog
):
    import redis

    order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)

    class Down:
        def set(self, *args, **kwargs):
            raise redis.ConnectionError("Connection refused.")

    monkeypatch.setattr(notify_duplicates, "redis_client", lambda: Down())
    with caplog.at_level("WARNING", logger="apps.payments.notify_duplicates"):
        with django_capture_on_commit_callbacks(execute=True):
            assert notifications.payment_notification_handle(body) == SUCCESS  # paid all the same
        assert not notify_duplicates.applied_remember(out_trade_no="x", transaction_id="y", total_fee=1)  # paused
    assert len([r for r in caplog.records if r.name == "apps.payments.notify_duplicates"]) == 1
    monkeypatch.undo()
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"
    assert gate_call(body)[1] == [body]
    assert django_notify(body)[2] == SUCCESS


def test_a_payment_found_by_orderquery_is_marked_too(
    buyer, make_sku, place_order, wechat, django_capture_on_commit_callbacks
):
    from apps.payments import services

    order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.payment_sync(payment=Payment.objects.get(out_trade_no=order["order_no"])) == "SUCCESS"
    assert gate_call(body)[1] == []  # the notification that arrives afterwards is a duplicate
    assert django_notify(body)[2] == SUCCESS


# --- the audit rows -----------------------------------------------------------------------------


def test_the_flush_writes_rows_with_the_time_the_gate_answered(paid):
    order, body = paid
    answered = dt.datetime(2026, 11, 30, 12, 0, 1, 250000, tzinfo=dt.UTC)  # a minute before the flush, say
    get_redis_connection("default").rpush(
        notify_duplicates.backlog_key(), notify_duplicates.backlog_entry(body, answered.timestamp())
    )
    assert notify_duplicates.notify_duplicates_record() == 1
    row = Notification.objects.order_by("id").last()
    assert (row.outcome, row.out_trade_no) == ("duplicate", order["order_no"])
    assert row.received_at == answered
    assert notify_duplicates.notify_duplicates_record() == 0  # twice: nothing more


def test_the_flush_goes_in_batches_and_keeps_a_refused_batch(paid, monkeypatch):
    from django.db import DatabaseError

    _, body = paid
    for _ in range(5):
        assert gate_call(body)[1] == []
    monkeypatch.setattr(notify_duplicates, "FLUSH_BATCH", 2)
    real = Notification.objects.bulk_create
    calls = []

    def refuse_the_second(rows, *args, **kwargs):
        calls.append(len(rows))
        if len(calls) == 2:
            raise DatabaseError("the database went away")
        return real(rows, *args, **kwargs)

    monkeypatch.setattr(Notification.objects, "bulk_create", refuse_the_second)
    with pytest.raises(DatabaseError):
        notify_duplicates.notify_duplicates_record()
    assert get_redis_connection("default").llen(notify_duplicates.backlog_key()) == 3  # given back
    assert notify_duplicates.notify_duplicates_record() == 3
    assert Counter(outcomes()) == {"applied": 1, "duplicate": 5}
    assert calls == [2, 2, 2, 1]


def test_the_flush_is_on_beats_schedule(settings):
    from apps.payments.tasks import notify_duplicates_record

    entry = settings.CELERY_BEAT_SCHEDULE["notify-duplicates-record"]
    assert entry["task"] == notify_duplicates_record.name
    assert entry["schedule"] == settings.NOTIFY_DUPLICATES_FLUSH_SECONDS


# --- the storm, through the shop's ASGI application -------------------------------------------


class _Shop:
    """The shop's ASGI application, whose gates' PostgreSQL pools and Redis clients are closed
    at the end of the event loop :func:`run` made (a worker keeps them for its lifetime)."""

    def __init__(self) -> None:
        from starmall.asgi import application

        self.application = application

    async def __call__(self, scope, receive, send) -> None:
        await self.application(scope, receive, send)

    async def aclose(self) -> None:
        from starmall.asgi import gates

        for gate in gates:
            await gate.aclose()


def _deliver_all(bodies: list[bytes]) -> list[tuple[int, bytes]]:
    """POST every body to the notify URL through the shop's ASGI application, all at once in one
    event loop as a web worker runs them: (status, body) each."""
    answers = run(_Shop(), [(body, HEADERS) for body in bodies], path=NOTIFY_PATH)
    return [(status, payload) for status, _headers, payload in answers]


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_a_storm_of_resent_notifications_pays_each_order_once(
    buyer, make_sku, place_order, wechat, monkeypatch, settings
):
    """Every notification delivered three times, shuffled, all at once, through the shop's
    ASGI application (gates, a2wsgi's threads, Django): every delivery answered SUCCESS, each
    first delivery queued once and none applied in the request; once the worker has applied the
    queue, each order paid once with one set of follow-ups and one "paid" event, and after
    beat's flush exactly one audit row per delivery."""
    from django.db import connection
    from django.utils import timezone

    from apps.payments import notify_queue
    from apps.payments.models import QueuedNotification
    from starmall import dispatch

    # a2wsgi's threads keep no connection past their request (CONN_MAX_AGE), so none is left
    # open on the test database when it is flushed and dropped.
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    settings.NOTIFY_GATE_CONNECTIONS = 2
    monkeypatch.setattr(dispatch, "push", lambda *args, **kwargs: True)  # the worker is this test, below
    settings.MAX_UNPAID_ORDERS = 20  # one buyer, twelve unpaid orders
    orders, bodies = [], []
    for _ in range(12):
        order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
        orders.append(order["order_no"])
        bodies.append(body)
    deliveries = [body for body in bodies for _ in range(3)]
    random.Random(7).shuffle(deliveries)

    answers = _deliver_all(deliveries)

    assert answers == [(200, SUCCESS)] * len(deliveries)
    assert Notification.objects.count() == 0  # nothing reached Django
    assert QueuedNotification.objects.count() == len(orders)
    assert Order.objects.filter(order_no__in=orders, status="paid").count() == 0
    assert notify_queue.queued_sweep(now=timezone.now() + dt.timedelta(minutes=1)) == len(orders)  # the worker
    assert Order.objects.filter(order_no__in=orders, status="paid").count() == len(orders)
    assert OrderEvent.objects.filter(order__order_no__in=orders, to_status="paid").count() == len(orders)
    per_order = Counter(FollowUp.objects.values_list("order__order_no", flat=True))
    assert per_order == {no: 3 for no in orders}  # message, SMS, points: one set each
    assert notify_duplicates.notify_duplicates_record() == 2 * len(orders)
    assert Counter(outcomes()) == {"applied": len(orders), "duplicate": 2 * len(orders)}
    assert Counter(Notification.objects.values_list("out_trade_no", flat=True)) == {no: 3 for no in orders}

    # WeChat sends the whole storm once more: every delivery is now a marked copy, none Django's
    # (12 at a time: past REDIS_MAX_CONNECTIONS Redis calls at once, the gate passes to Django).
    answers = [answer for i in range(0, len(deliveries), 12) for answer in _deliver_all(deliveries[i : i + 12])]
    assert answers == [(200, SUCCESS)] * len(deliveries)
    assert Notification.objects.count() == len(deliveries)  # nothing written by Django
    assert notify_duplicates.notify_duplicates_record() == len(deliveries)
    assert Counter(Notification.objects.values_list("out_trade_no", flat=True)) == {no: 6 for no in orders}
    assert Counter(FollowUp.objects.values_list("order__order_no", flat=True)) == {no: 3 for no in orders}
    assert not QueuedNotification.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_through_the_shops_asgi_application_the_first_goes_to_django_the_second_to_the_gate(
    buyer, make_sku, place_order, wechat, monkeypatch
):
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    order, body = _unpaid_at_wechat(buyer, make_sku, place_order, wechat)
    first = _deliver_all([body])
    assert first == [(200, SUCCESS)]
    assert Order.objects.get(order_no=order["order_no"]).status == "paid"
    assert marker(order["order_no"]) is not None  # written after Django's real commit
    second = _deliver_all([body])
    assert second == [(200, SUCCESS)]
    assert outcomes() == ["applied"]  # the second's row waits for beat
    assert notify_duplicates.notify_duplicates_record() == 1
    assert outcomes() == ["applied", "duplicate"]
    assert FollowUp.objects.filter(order__order_no=order["order_no"]).count() == 3
