"""The create gate (``starmall.gates.creates``) under faults, on PostgreSQL.

A create thread's connection killed while its batch waits for a row, a statement cancelled in
a batch's second group, every create thread busy past the wait, the gate closed while a create
runs: each request gets its own order or is handed to Django (``Inner``'s ``django``) with
nothing of it written; no order is made twice; the thread reconnects; no connection stays open.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time

import psycopg
import pytest
from django.conf import settings as django_settings
from django.db import connections

from apps.catalog.models import Sku
from apps.marketing import flash_quota
from apps.marketing.models import FlashSale, FlashSalePurchase
from apps.orders.models import Order, OrderEvent, OrderLine
from apps.shipping import selectors as freight
from starmall.gates import creates, postgres
from starmall.gates.orders import OrderGate
from tests.orders import test_create_gate as base
from tests.orders.test_create_gate import _body, _confirm, _headers, _quota, buyer_with_address, django_create
from tests.orders.test_soldout_gate import Inner

# the gate tests' fixtures, used here as they are there
sale, _patient_redis, _no_gate_connection_left = base.sale, base._patient_redis, base._no_gate_connection_left

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

PROBE = "starmall-test-probe"


def _dsn() -> str:
    return postgres.conninfo(django_settings.DATABASES["default"], application_name=PROBE)


@contextlib.contextmanager
def _row_held(sql: str, params: list):
    """Another connection holds the row ``sql`` locks (``FOR UPDATE``) until the block ends;
    yields a function that releases it earlier."""
    locker = psycopg.connect(_dsn())
    locker.execute(sql, params)
    try:
        yield locker.rollback
    finally:
        locker.rollback()
        locker.close()


def _stop_the_lock_waiter(how: str, timeout: float = 5.0) -> int:
    """Once a backend of the test database waits for a lock, ``how`` it (``pg_terminate_backend``
    or ``pg_cancel_backend``); returns its pid."""
    with psycopg.connect(_dsn(), autocommit=True) as probe:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            row = probe.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).fetchone()
            if row is not None:
                probe.execute(f"SELECT {how}(%s)", [row[0]])
                return row[0]
            time.sleep(0.02)
    raise AssertionError("no create waited for the row")


def _gate_connections(main_pid: int) -> int:
    """Client connections to the test database but the test's own (``main_pid``) and the probes."""
    with psycopg.connect(_dsn(), autocommit=True) as probe:
        return probe.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND backend_type = 'client backend' AND pid <> %s AND application_name <> %s",
            [main_pid, PROBE],  # a probe closed a moment ago may still be listed
        ).fetchone()[0]


def _main_pid() -> int:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


class Threads:
    """What the create threads hand to ``orders_create``: each call's keys, thread and backend
    pid after it; ``hold`` calls wait for :meth:`release` before creating."""

    def __init__(self, real) -> None:
        self.real, self.calls, self.threads, self.pids = real, [], [], []
        self.hold, self.started, self._go = 0, threading.Semaphore(0), threading.Event()

    def release(self) -> None:
        self._go.set()

    def __call__(self, requests):
        self.calls.append([r.order_key for r in requests])
        self.threads.append(threading.get_ident())
        self.started.release()
        if len(self.calls) <= self.hold:
            assert self._go.wait(10)
        try:
            return self.real(requests)
        finally:
            raw = connections["default"].connection
            self.pids.append(raw.info.backend_pid if raw is not None and not raw.closed else None)


@pytest.fixture
def threads(monkeypatch) -> Threads:
    recorder = Threads(creates.orders_create)
    monkeypatch.setattr(creates, "orders_create", recorder)
    return recorder


async def send(gate, body: bytes, headers: dict) -> tuple[int, bytes]:
    """One create through ``gate`` in the running loop: (status, body)."""
    pairs = [*headers.items(), ("Content-Length", str(len(body)))]
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "POST",
        "path": creates.CREATE_PATH,
        "scheme": "http",
        "query_string": b"",
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in pairs],
    }
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    sent = []

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def out(message):
        sent.append(message)

    await gate(scope, receive, out)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


async def _queued(gate, n: int) -> None:
    """Return once ``n`` creates wait for a create thread of ``gate`` in this loop."""
    for _ in range(500):
        if len(gate._creates._pending().entries) >= n:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{n} creates never queued")


def _order_no(answer: tuple[int, bytes]) -> str:
    assert answer[0] == 201, answer
    return json.loads(answer[1])["order_no"]


@pytest.fixture
def people(make_customer):
    freight.all_terms()
    return [buyer_with_address(make_customer, i) for i in range(5)]


def test_a_threads_connection_killed_mid_batch_hands_the_batch_to_django_and_the_thread_reconnects(
    sale, people, make_sku, threads, settings, monkeypatch
):
    """One create thread: a plain create holds it while three winners queue; they go out as ONE
    batch, which waits for the sale's row (held by another connection) and is killed there.
    PostgreSQL rolls it back whole; the three reach Django, which makes each once; the next
    create on the thread, on a new connection, is the gate's."""
    settings.CREATE_GATE_CONNECTIONS = 1
    monkeypatch.setattr(creates, "CONNECTION_WAIT_SECONDS", 10.0)
    threads.hold = 1
    plain = make_sku(stock=5)
    first = _confirm(people[0], sku=plain)
    winners = [_confirm(p, sale) for p in people[1:4]]
    after = _confirm(people[4], sale)
    gate = OrderGate(Inner())

    async def main():
        try:
            with _row_held("SELECT 1 FROM marketing_flashsale WHERE id = %s FOR UPDATE", [sale.pk]) as release:
                holder = asyncio.ensure_future(send(gate, _body(first), _headers(people[0])))
                assert await asyncio.to_thread(threads.started.acquire, True, 5)
                batch = [asyncio.ensure_future(send(gate, _body(d), _headers(p))) for d, p in zip(winners, people[1:4])]
                await _queued(gate, 3)
                threads.release()
                killed = await asyncio.to_thread(_stop_the_lock_waiter, "pg_terminate_backend")
                answers = await asyncio.gather(holder, *batch)
                release()
            return killed, answers, await send(gate, _body(after), _headers(people[4]))
        finally:
            await gate.aclose()

    killed, answers, last = asyncio.run(main())
    assert [sorted(keys) for keys in threads.calls] == [
        [first["order_key"]],
        sorted(d["order_key"] for d in winners),  # one batch
        [after["order_key"]],
    ]
    assert len(set(threads.threads)) == 1 and threads.pids[0] == killed  # one thread, its connection killed
    assert threads.pids[2] not in (None, killed)  # ... and connected anew for the next create
    _order_no(answers[0])
    assert answers[1:] == [(200, b"django")] * 3 and sorted(gate.app.bodies) == sorted(_body(d) for d in winners)
    made = Order.objects.get(order_no=_order_no(last))
    assert set(Order.objects.values_list("order_key", flat=True)) == {first["order_key"], after["order_key"]}
    assert OrderLine.objects.count() == OrderEvent.objects.count() == 2  # nothing of the batch kept
    sale.refresh_from_db()
    assert (sale.stock, sale.sold, made.flash_sale_id) == (4, 1, sale.pk)
    assert list(FlashSalePurchase.objects.values_list("customer_id", "quantity")) == [(people[4].pk, 1)]
    assert Sku.objects.get(pk=sale.sku_id).stock == 19 and Sku.objects.get(pk=plain.pk).stock == 4
    assert _quota(sale) == (1, {p.pk: 1 for p in people[1:]}, 3)  # the three reservations wait for Django

    for draft, buyer in zip(winners, people[1:4], strict=True):  # what Django answers them
        assert django_create(_body(draft), _headers(buyer))[0] == 201
    sale.refresh_from_db()
    assert (sale.stock, sale.sold, Order.objects.filter(flash_sale=sale).count()) == (1, 4, 4)
    assert _quota(sale) == (1, {p.pk: 1 for p in people[1:]}, 0)


def test_a_cancelled_second_group_keeps_the_first_groups_orders_and_answers(
    sale, people, make_sku, threads, settings, monkeypatch
):
    """A batch of two groups (the sale's, a plain SKU's) whose second waits for the SKU's row and
    is cancelled there (a statement or lock timeout does the same): the sale's group committed
    and its requests get their 201; the SKU group's reach Django with nothing written."""
    settings.CREATE_GATE_CONNECTIONS = 1
    monkeypatch.setattr(creates, "CONNECTION_WAIT_SECONDS", 10.0)
    threads.hold = 1
    plain, other = make_sku(stock=5), make_sku(stock=5)
    first = _confirm(people[0], sku=other)
    wanted = [
        (people[1], _confirm(people[1], sale)),
        (people[2], _confirm(people[2], sku=plain)),
        (people[3], _confirm(people[3], sale)),
        (people[4], _confirm(people[4], sku=plain)),
    ]
    gate = OrderGate(Inner())

    async def main():
        try:
            with _row_held("SELECT 1 FROM catalog_sku WHERE id = %s FOR UPDATE", [plain.pk]):
                holder = asyncio.ensure_future(send(gate, _body(first), _headers(people[0])))
                assert await asyncio.to_thread(threads.started.acquire, True, 5)
                batch = {}
                for i in (0, 2, 1, 3):  # the sale's group first in the batch, then the SKU's
                    batch[i] = asyncio.ensure_future(send(gate, _body(wanted[i][1]), _headers(wanted[i][0])))
                    await _queued(gate, len(batch))
                threads.release()
                await asyncio.to_thread(_stop_the_lock_waiter, "pg_cancel_backend")
                return await asyncio.gather(holder, *(batch[i] for i in range(4)))
        finally:
            await gate.aclose()

    answers = asyncio.run(main())
    assert threads.calls == [[first["order_key"]], [wanted[i][1]["order_key"] for i in (0, 2, 1, 3)]]
    for (buyer, draft), answer in zip([wanted[0], wanted[2]], [answers[1], answers[3]], strict=True):
        order = Order.objects.get(order_no=_order_no(answer))  # the gate's own answer, not Django's replay
        assert (order.order_key, order.customer_id, order.pay_fen) == (draft["order_key"], buyer.pk, draft["pay_fen"])
    assert (answers[2], answers[4]) == ((200, b"django"), (200, b"django"))
    assert not Order.objects.filter(order_key__in=[wanted[1][1]["order_key"], wanted[3][1]["order_key"]]).exists()
    assert Sku.objects.get(pk=plain.pk).stock == 5
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (3, 2) and _quota(sale) == (3, {people[1].pk: 1, people[3].pk: 1}, 0)
    for buyer, draft in (wanted[1], wanted[3]):
        assert django_create(_body(draft), _headers(buyer))[0] == 201
    assert Sku.objects.get(pk=plain.pk).stock == 3 and Order.objects.count() == 5


def test_creates_finding_every_thread_busy_past_the_wait_reach_django_and_none_is_made_twice(
    sale, people, threads, settings, monkeypatch
):
    """Two create threads, both busy; two more creates wait CONNECTION_WAIT_SECONDS for one and
    go to Django, never handed to ``orders_create``. The two taken are answered by the gate even
    though they finished after the wait; Django then makes the other two, and replays the first."""
    settings.CREATE_GATE_CONNECTIONS = 2
    monkeypatch.setattr(creates, "CONNECTION_WAIT_SECONDS", 0.3)
    threads.hold = 2
    wanted = [(p, _confirm(p, sale)) for p in people[:4]]
    gate = OrderGate(Inner())

    async def main():
        try:
            taken = []
            for buyer, draft in wanted[:2]:  # one thread each
                taken.append(asyncio.ensure_future(send(gate, _body(draft), _headers(buyer))))
                assert await asyncio.to_thread(threads.started.acquire, True, 5)
            started = time.monotonic()
            late = await asyncio.gather(*(send(gate, _body(d), _headers(b)) for b, d in wanted[2:]))
            waited = time.monotonic() - started
            threads.release()
            return await asyncio.gather(*taken), late, waited
        finally:
            await gate.aclose()

    taken, late, waited = asyncio.run(main())
    assert late == [(200, b"django")] * 2 and 0.25 < waited < 2
    assert sorted(threads.calls) == sorted([[d["order_key"]] for _, d in wanted[:2]])  # the late ones never sent
    made = [_order_no(answer) for answer in taken]
    assert [Order.objects.get(order_no=n).order_key for n in made] == [d["order_key"] for _, d in wanted[:2]]
    assert Order.objects.count() == 2
    for buyer, draft in wanted[2:]:
        assert django_create(_body(draft), _headers(buyer))[0] == 201
    status, _, body = django_create(_body(wanted[0][1]), _headers(wanted[0][0]))
    assert (status, json.loads(body)["order_no"]) == (200, made[0])  # a replay, not a second order
    sale.refresh_from_db()
    assert (sale.stock, sale.sold, Order.objects.count()) == (1, 4, 4)
    assert _quota(sale) == (1, {p.pk: 1 for p in people[:4]}, 0)


def test_closing_the_gate_finishes_the_create_under_way_and_leaves_no_connection_open(sale, people, settings):
    """Three create threads have connected; the gate closes while a create waits for the sale's
    row: the close waits for it (201, once), then every thread's connection is closed."""
    settings.CREATE_GATE_CONNECTIONS = 3
    FlashSale.objects.filter(pk=sale.pk).update(stock=10, limit_per_customer=3)
    flash_quota.card_write(FlashSale.objects.get(pk=sale.pk))
    flash_quota.quota_load(sale.pk, force=True)
    early = [(p, _confirm(p, sale)) for p in people[:4] for _ in range(2)]
    last = _confirm(people[4], sale)
    main_pid = _main_pid()
    gate = OrderGate(Inner())

    async def main():
        answers = await asyncio.gather(*(send(gate, _body(d), _headers(b)) for b, d in early))
        opened = await asyncio.to_thread(_gate_connections, main_pid)
        with _row_held("SELECT 1 FROM marketing_flashsale WHERE id = %s FOR UPDATE", [sale.pk]) as release:
            waiting = asyncio.ensure_future(send(gate, _body(last), _headers(people[4])))
            await asyncio.to_thread(_wait_for_a_lock_wait)
            closing = asyncio.ensure_future(gate.aclose())
            await asyncio.sleep(0.2)
            assert not closing.done()  # it waits for the create under way
            release()
            await closing
        return answers, opened, await waiting

    answers, opened, final = asyncio.run(main())
    assert [a[0] for a in answers] == [201] * 8 and 1 <= opened <= 3
    assert Order.objects.get(order_no=_order_no(final)).order_key == last["order_key"]
    for _ in range(50):
        if _gate_connections(main_pid) == 0:
            break
        time.sleep(0.02)
    assert _gate_connections(main_pid) == 0
    sale.refresh_from_db()
    assert (sale.stock, sale.sold, Order.objects.count()) == (1, 9, 9)


def _wait_for_a_lock_wait(timeout: float = 5.0) -> None:
    with psycopg.connect(_dsn(), autocommit=True) as probe:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if probe.execute(
                "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).fetchone():
                return
            time.sleep(0.02)
    raise AssertionError("no create waited for the row")
