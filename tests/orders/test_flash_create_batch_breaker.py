"""Adversarial tests of winners' creates made in one transaction per sale
(``apps.orders.flash_create.create_many`` sent by ``starmall.gates.postgres.Batches``).

They pin down what a later change could break: the lock order, conservation under concurrency,
answers reaching their own requests, a refusal sending only its own item alone, an error in one
group leaving another group's committed answers standing, a lost connection, the wait limit.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import random
import threading
import time
import uuid

import psycopg
import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.db.models import Sum
from django.utils import timezone
from django_redis import get_redis_connection

from apps.catalog.models import Sku
from apps.marketing import flash_quota
from apps.marketing.models import FlashSale, FlashSalePurchase
from apps.orders import drafts, flash_create, flash_reservations, services
from apps.orders.create import order_create
from apps.orders.models import Order, OrderLine, OrderStatus
from apps.shipping import selectors as freight
from starmall.errors import ShopError
from starmall.gates import creates, postgres
from starmall.gates.orders import OrderGate
from tests.orders import test_flash_create as base
from tests.orders import test_flash_create_batch as batch_base
from tests.orders.test_flash_create import _body, _confirm, _headers, buyer_with_address, django_create, run
from tests.orders.test_flash_create_batch import item, on_connection
from tests.orders.test_soldout_gate import Inner

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

# the fixtures of the two modules, used here as they are there
sale, _patient_redis, _no_gate_connection_left = base.sale, base._patient_redis, base._no_gate_connection_left
buyers, calls = batch_base.buyers, batch_base.calls

APP = "starmall-test-gate"  # on_connection's application_name


# --- helpers ------------------------------------------------------------------------------------


@pytest.fixture
def failures(monkeypatch) -> list[str]:
    """``"<exception class>/<items>"`` for every transaction of ``flash_create`` that raised."""
    seen: list[str] = []
    real = flash_create._run

    async def recorded(conn, items):
        try:
            return await real(conn, items)
        except Exception as exc:
            seen.append(f"{type(exc).__name__}/{len(items)}")
            raise

    monkeypatch.setattr(flash_create, "_run", recorded)
    return seen


def _dsn(application_name: str = "starmall-test-probe") -> str:
    return postgres.conninfo(django_settings.DATABASES["default"], application_name=application_name)


def _wait_for_lock_wait(application_name: str, timeout: float = 5.0) -> None:
    """Return once the backend named ``application_name`` waits for a lock."""
    with psycopg.connect(_dsn(), autocommit=True) as probe:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            row = probe.execute(
                "SELECT wait_event_type FROM pg_stat_activity WHERE application_name = %s AND state = 'active'",
                [application_name],
            ).fetchone()
            if row is not None and row[0] == "Lock":
                return
            time.sleep(0.02)
    raise AssertionError(f"{application_name} never waited for a lock")


def _pair(people):
    """Two buyers, the one with the lower id first (a batch takes the lower customer's steps first)."""
    return sorted(people[:2], key=lambda c: c.pk)


def clone(draft: dict) -> dict:
    """Another draft equal to ``draft`` under a new key (as a second confirm would write it, but
    past Redis's quota and per-customer hold: PostgreSQL must be the one that judges it)."""
    key = uuid.uuid4().hex
    drafts.draft_save(key, {**drafts.draft_get(draft["order_key"]), "order_key": key})
    return {**draft, "order_key": key}


def _threads(*targets) -> None:
    """Run ``targets`` at once, each in its own thread (closing its Django connection)."""
    errors: list[BaseException] = []

    def wrap(fn):
        def go():
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
            finally:
                connection.close()

        return go

    threads = [threading.Thread(target=wrap(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a thread is stuck"
    assert errors == [], errors


def _while_a_row_is_held(name: str, stop: str, lock_sql: str, items: list, warn) -> list:
    """Submit ``items`` to a create gate's batches (its pool named ``name``, one connection)
    while another connection holds the row ``lock_sql`` locks; once the gate's statement waits
    for it, ``stop`` (``pg_cancel_backend`` or ``pg_terminate_backend``) that statement. The
    items' results."""
    database = postgres.Database(name, "CREATE_GATE_CONNECTIONS")
    gate_creates = creates.batches(database, warn)
    locker = psycopg.connect(_dsn())
    locker.execute(lock_sql)

    def stop_the_waiting_statement():
        _wait_for_lock_wait(f"starmall-{name}")
        with psycopg.connect(_dsn(), autocommit=True) as dba:
            dba.execute(f"SELECT {stop}(pid) FROM pg_stat_activity WHERE application_name = %s", [f"starmall-{name}"])

    async def main():
        try:
            await database.warm()
            tasks = [asyncio.ensure_future(creates.submit(it, 5.0)) for it in items]
            await asyncio.to_thread(stop_the_waiting_statement)
            return await asyncio.gather(*tasks)
        finally:
            await creates.drain()
            await database.close()

    try:
        return asyncio.run(main())
    finally:
        locker.rollback()
        locker.close()


def _check_answers(items: list[flash_create.Create], made: list) -> None:
    """Each result belongs to its own item: the key's order, of the item's customer, with the
    item's order_no; a None left no order of the key (unless another create made it)."""
    assert len(made) == len(items)
    for it, created in zip(items, made, strict=True):
        if created is None:
            continue
        row = Order.objects.get(order_key=it.draft.order_key)
        assert (created.order.pk, created.order.order_key, created.order.customer_id, created.order.order_no) == (
            row.pk,
            it.draft.order_key,
            it.customer_id,
            it.order_no,
        )
        assert row.customer_id == it.customer_id and row.order_no == it.order_no
        assert [line.pk for line in created.lines] == list(
            OrderLine.objects.filter(order=row).order_by("id").values_list("id", flat=True)
        )
        assert sum(line.quantity for line in created.lines) == it.draft.units or not it.draft.flash_sale_id


def _books(sale_id: int, sale_units: int, sku_id: int, sku_units: int) -> None:
    """The sale and the SKU hold exactly the units the live (unpaid) orders do not."""
    live = Order.objects.filter(status=OrderStatus.UNPAID)
    sold = OrderLine.objects.filter(order__in=live.filter(flash_sale_id=sale_id)).aggregate(n=Sum("quantity"))["n"] or 0
    on_sku = OrderLine.objects.filter(order__in=live, sku_id=sku_id).aggregate(n=Sum("quantity"))["n"] or 0
    sale = FlashSale.objects.get(pk=sale_id)
    assert (sale.sold, sale.stock) == (sold, sale_units - sold)
    assert Sku.objects.get(pk=sku_id).stock == sku_units - on_sku
    for customer_id, quantity in FlashSalePurchase.objects.filter(sale_id=sale_id).values_list(
        "customer_id", "quantity"
    ):
        mine = (
            OrderLine.objects.filter(order__in=live.filter(flash_sale_id=sale_id, customer_id=customer_id)).aggregate(
                n=Sum("quantity")
            )["n"]
            or 0
        )
        assert quantity == mine <= sale.limit_per_customer


# --- 1. lock order: a batch against Django's cancel ---------------------------------------------


def test_a_batch_and_a_cancel_of_the_later_customers_flash_order_do_not_deadlock(sale, buyers, calls, failures):
    """``order_mark_cancelled`` (customer's cancel, unpaid timeout, sweep) takes order ->
    allowance -> sale -> SKU WITHOUT the customer's row lock (starmall/locking.py). A batch
    that takes item B's allowance only after item A's sale/SKU rows (the first version of
    create_many did: one take statement per item) waits for B's allowance while holding the
    sale, and the cancel holding B's allowance waits for the sale: a deadlock, the 秒杀's sale
    row stuck for deadlock_timeout. Paused right between the cancel's allowance and sale
    UPDATEs, the batch must simply wait for the cancel and then commit as ONE transaction."""
    a, b = _pair(buyers)
    first = item(_confirm(b, sale))
    earlier = on_connection(lambda conn: flash_create.create(conn, first))
    assert earlier is not None
    items = [item(_confirm(a, sale)), item(_confirm(b, sale))]
    calls.clear()
    order = Order.objects.get(pk=earlier.order.pk)
    made: list = []
    batch = threading.Thread(target=lambda: made.append(on_connection(lambda c: flash_create.create_many(c, items))))
    sale_update = f'UPDATE "{FlashSale._meta.db_table}"'

    def cancel_waits_for_the_batch(execute, sql, params, many, context):
        if sql.startswith(sale_update) and not batch.is_alive() and not made:
            batch.start()  # the cancel holds B's allowance row now
            _wait_for_lock_wait(APP)  # the batch runs until it waits for a row the cancel holds
        return execute(sql, params, many, context)

    started = time.monotonic()
    with connection.execute_wrapper(cancel_waits_for_the_batch):
        assert services.order_mark_cancelled(order=order, actor="customer", reason="不要了") is True
    batch.join(20)
    assert not batch.is_alive()

    assert failures == [], "the batch deadlocked with Django's cancel"
    assert calls == [2]  # one transaction, not rolled back and redone alone
    assert time.monotonic() - started < 0.9  # nobody sat out a deadlock_timeout (1 s) on the sale's row
    _check_answers(items, made[0])
    assert all(m is not None for m in made[0])
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (3, 2)
    assert dict(FlashSalePurchase.objects.values_list("customer_id", "quantity")) == {a.pk: 1, b.pk: 1}
    assert Order.objects.get(pk=earlier.order.pk).status == OrderStatus.CANCELLED
    assert Sku.objects.get(pk=sale.sku_id).stock == 18


# --- 2. concurrency: batches, lone creates, Django's creates and cancels at once ----------------


def test_concurrent_batches_django_creates_and_cancels_sell_exactly_the_stock(sale, make_customer, failures, settings):
    """Three connections run batches whose customers overlap (the same customer in two batches
    at once, twice in one batch), on the sale AND plain orders of the sale's own SKU, while
    Django creates orders of the same customers and cancels earlier 秒杀 orders of them. More
    winners than units, allowances pushed past the limit: every unit is accounted for, no
    customer passes the limit, nothing deadlocks, every answer is its own item's."""
    settings.MAX_UNPAID_ORDERS = 20
    freight.all_terms()
    FlashSale.objects.filter(pk=sale.pk).update(stock=10, limit_per_customer=2)
    Sku.objects.filter(pk=sale.sku_id).update(stock=16)
    flash_quota.quota_load(sale.pk, force=True)
    get_redis_connection("default").set(flash_quota.key(sale.pk, "quota"), 1000)
    sku = Sku.objects.get(pk=sale.sku_id)
    people = [buyer_with_address(make_customer, i) for i in range(8)]
    earlier = []
    for buyer in people[:4]:  # one 秒杀 order each, cancelled while the batches run
        first = item(_confirm(buyer, sale))
        earlier.append(on_connection(lambda conn, f=first: flash_create.create(conn, f)).order.pk)
    flash_drafts = {buyer.pk: _confirm(buyer, sale) for buyer in people}
    work = []
    for buyer in people:
        work += [item(flash_drafts[buyer.pk]), item(clone(flash_drafts[buyer.pk]))]
        work.append(item(_confirm(buyer, sku=sku)))
    by_django = [(buyer, clone(flash_drafts[buyer.pk])) for buyer in people[::2]]
    by_django += [(buyer, _confirm(buyer, sku=sku, units=2)) for buyer in people[1::2]]
    rng = random.Random(7)
    rng.shuffle(work)
    slices = [work[0::3], work[1::3], work[2::3]]
    slices[1] = slices[1] + [work[0]]  # one key in two batches at once: one order of it
    results: dict[int, list] = {}
    django_outcomes: list = []

    def batch(n: int):
        results[n] = on_connection(lambda conn: flash_create.create_many(conn, slices[n]))

    def django():
        for buyer, draft in by_django:
            try:
                order, created = order_create(customer=buyer, order_key=draft["order_key"])
                django_outcomes.append(created)
            except ShopError as exc:
                django_outcomes.append(exc.code)

    def cancels():
        for pk in earlier:
            assert services.order_mark_cancelled(order=Order.objects.get(pk=pk), actor="system:timeout", reason="超时")

    _threads(lambda: batch(0), lambda: batch(1), lambda: batch(2), django, cancels)

    assert not [f for f in failures if f.startswith("DeadlockDetected")]
    for n in range(3):
        _check_answers(slices[n], results[n])
    key0 = work[0].draft.order_key
    made_key0 = [m for n in (0, 1) for it, m in zip(slices[n], results[n]) if it.draft.order_key == key0 and m]
    assert len(made_key0) <= 1 and Order.objects.filter(order_key=key0).count() <= 1
    for it in work:  # no key got two orders, and each order is its draft's customer's
        rows = list(Order.objects.filter(order_key=it.draft.order_key).values_list("customer_id", flat=True))
        assert rows in ([], [it.customer_id])
    sale.refresh_from_db()
    assert sale.sold <= 10 and Sku.objects.get(pk=sku.pk).stock >= 0
    assert Order.objects.filter(status=OrderStatus.CANCELLED).count() == 4
    _books(sale.pk, 10, sku.pk, 16)
    assert len(django_outcomes) == len(by_django)


# --- 3. one customer twice in a batch -----------------------------------------------------------


def test_one_customer_past_the_limit_inside_one_batch_gets_exactly_the_limit(sale, buyers, calls):
    """limit_per_customer=2: three 1-unit drafts of A and one of B in one batch. The batch's
    allowances are counted one after another inside the transaction: A's third (in key order)
    is refused, the other three go out together again, and alone that third is refused again."""
    a, b = _pair(buyers)
    first = _confirm(a, sale)
    items = [item(first), item(clone(first)), item(_confirm(b, sale)), item(clone(first))]
    calls.clear()
    made = on_connection(lambda conn: flash_create.create_many(conn, items))
    assert calls == [4, 3, 1]
    mine = [0, 1, 3]
    refused = max(mine, key=lambda i: items[i].draft.order_key)  # the transaction takes A's by key
    assert [m is None for m in made] == [i == refused for i in range(4)]
    _check_answers(items, made)
    assert dict(FlashSalePurchase.objects.values_list("customer_id", "quantity")) == {a.pk: 2, b.pk: 1}
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (2, 3)
    assert not Order.objects.filter(order_key=items[refused].draft.order_key).exists()


def test_one_customer_at_the_limit_inside_one_batch_is_one_transaction(sale, buyers, calls):
    a, b = _pair(buyers)
    first = _confirm(a, sale)
    items = [item(_confirm(b, sale)), item(first), item(clone(first))]
    calls.clear()
    made = on_connection(lambda conn: flash_create.create_many(conn, items))
    assert calls == [3] and all(m is not None for m in made)
    _check_answers(items, made)
    assert dict(FlashSalePurchase.objects.values_list("customer_id", "quantity")) == {a.pk: 2, b.pk: 1}


def test_the_unpaid_cap_counts_every_order_of_the_customer_in_the_batch(buyers, make_sku, calls, settings):
    """MAX_UNPAID_ORDERS=2, A already has one unpaid order: two more of A in one batch make 3.
    The cap counts every order the transaction inserted, so the batch is refused at A's first
    (in key order); A's other one and B's go out together, the first alone is refused again."""
    settings.MAX_UNPAID_ORDERS = 2
    sku = make_sku(stock=10)
    a, b = _pair(buyers)
    existing = item(_confirm(a, sku=sku))
    on_connection(lambda conn: flash_create.create(conn, existing))
    mine = _confirm(a, sku=sku)
    items = [item(mine), item(_confirm(b, sku=sku)), item(clone(mine))]
    calls.clear()
    made = on_connection(lambda conn: flash_create.create_many(conn, items))
    assert calls == [3, 2, 1]
    refused = min((0, 2), key=lambda i: items[i].draft.order_key)
    assert [m is None for m in made] == [i == refused for i in range(3)]
    _check_answers(items, made)
    assert Order.objects.filter(customer=a).count() == 2 and Sku.objects.get(pk=sku.pk).stock == 7

    settings.MAX_UNPAID_ORDERS = 4  # now both fit: one transaction
    more = _confirm(b, sku=sku)
    items = [item(more), item(clone(more))]
    calls.clear()
    made = on_connection(lambda conn: flash_create.create_many(conn, items))
    assert calls == [2] and all(m is not None for m in made)
    assert Order.objects.filter(customer=b).count() == 3


# --- 4. refusals at the end of the batch, answers in the items' order ---------------------------


def test_the_last_unit_short_for_the_last_customer_refuses_only_the_item_that_finds_it_gone(sale, make_customer, calls):
    """Five buyers, four units in PostgreSQL, items given in DESCENDING customer order: the batch
    (run by ascending customer) fails on its last take, the HIGHEST customer's, the first item;
    the four before it in the transaction go out together again and are made, the first item
    alone is refused. Each answer is its own."""
    freight.all_terms()
    people = sorted((buyer_with_address(make_customer, i) for i in range(5)), key=lambda c: -c.pk)
    flash_quota.quota_load(sale.pk, force=True)
    items = [item(_confirm(buyer, sale)) for buyer in people]
    FlashSale.objects.filter(pk=sale.pk).update(stock=4)
    calls.clear()
    made = on_connection(lambda conn: flash_create.create_many(conn, items))
    assert calls == [5, 4, 1]
    assert [m is not None for m in made] == [False, True, True, True, True]
    _check_answers(items, made)
    assert not Order.objects.filter(customer=people[0]).exists()
    assert [m.sold_out for m in made[1:]] == [[], [], [], []]  # the SKU (20) did not run out
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (0, 4)


def test_the_sold_out_flag_after_a_fallback_is_the_item_that_took_the_last_unit(make_sku, buyers, calls):
    """SKU stock 3; items of 2, 1 and 1 units: the batch is refused at the third (4 > 3); the
    first two together again leave 1 (no flag) and then 0 (the flag), the third alone is
    refused."""
    sku = make_sku(stock=3)
    items = [
        item(_confirm(buyers[0], sku=sku, units=2)),
        item(_confirm(buyers[1], sku=sku)),
        item(_confirm(buyers[2], sku=sku)),
    ]
    made = on_connection(lambda conn: flash_create.create_many(conn, items))
    assert calls == [3, 2, 1]
    assert made[2] is None
    assert (made[0].sold_out, made[1].sold_out) == ([], [sku.pk])
    _check_answers(items, made)
    assert Sku.objects.get(pk=sku.pk).stock == 0


def test_the_window_is_judged_per_item(sale, buyers, calls):
    """Two winners of one batch: one request came in before ``ends_at``, the other after. The
    sale UPDATE judges each with its own ``now``: the batch is refused, the earlier one is made,
    the later one refused; once every request is late, nothing is kept."""
    a, b = _pair(buyers)
    ends = timezone.now() + dt.timedelta(seconds=30)
    FlashSale.objects.filter(pk=sale.pk).update(ends_at=ends)
    early, late = item(_confirm(a, sale)), item(_confirm(b, sale))
    late = dataclasses.replace(late, now=ends + dt.timedelta(seconds=1))
    calls.clear()
    made = on_connection(lambda conn: flash_create.create_many(conn, [late, early]))
    assert calls == [2, 1, 1]
    assert (made[0], made[1] is not None) == (None, True)
    _check_answers([late, early], made)

    later = dataclasses.replace(item(_confirm(a, sale)), now=ends + dt.timedelta(seconds=2))
    calls.clear()
    made = on_connection(lambda conn: flash_create.create_many(conn, [later, late]))
    assert made == [None, None] and calls == [2, 1, 1]
    sale.refresh_from_db()
    assert (sale.stock, sale.sold, Order.objects.count()) == (4, 1, 1)
    assert dict(FlashSalePurchase.objects.values_list("customer_id", "quantity")) == {a.pk: 1}


def test_two_batches_of_the_same_keys_on_two_connections_make_each_order_once(sale, make_customer, failures):
    """The same six winners' creates sent at once on two connections (two web nodes, a retry):
    the second batch waits on the first's keys, then meets UNIQUE(order_key) and runs alone,
    getting None for each. Each key: exactly one order and one Created, of its customer."""
    freight.all_terms()
    people = [buyer_with_address(make_customer, i) for i in range(6)]
    FlashSale.objects.filter(pk=sale.pk).update(stock=10)
    flash_quota.quota_load(sale.pk, force=True)
    items = [item(_confirm(buyer, sale)) for buyer in people]
    out: dict[str, list] = {}
    _threads(
        lambda: out.__setitem__("one", on_connection(lambda c: flash_create.create_many(c, items))),
        lambda: out.__setitem__("two", on_connection(lambda c: flash_create.create_many(c, items[::-1]))),
    )
    _check_answers(items, out["one"])
    _check_answers(items[::-1], out["two"])
    made = [m for m in out["one"] + out["two"] if m is not None]
    assert sorted(m.order.order_key for m in made) == sorted(it.draft.order_key for it in items)
    assert Order.objects.count() == 6
    assert not [f for f in failures if f.startswith("DeadlockDetected")]
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (4, 6)


def test_one_capped_winner_does_not_send_every_other_winner_of_its_batch_alone(
    sale, make_customer, make_sku, calls, settings
):
    """The flash gate leaves the unpaid-orders cap to create (apps/orders/api/flash_confirm.py), so
    a winner holding MAX_UNPAID_ORDERS unpaid orders is an ordinary refusal, and anyone can
    arrange one. The refusal names its item: it alone runs again by itself, the other seven go
    out together — three transactions, not one per winner."""
    settings.MAX_UNPAID_ORDERS = 3
    freight.all_terms()
    people = [buyer_with_address(make_customer, i) for i in range(8)]
    FlashSale.objects.filter(pk=sale.pk).update(stock=10, limit_per_customer=1)
    flash_quota.quota_load(sale.pk, force=True)
    capped = people[3]
    sku = make_sku(stock=10)
    items = [item(_confirm(buyer, sale)) for buyer in people]  # all won in Redis
    plain = [item(_confirm(capped, sku=sku)) for _ in range(3)]
    for it in plain:  # then the capped buyer's three plain orders, left unpaid
        assert on_connection(lambda conn, it=it: flash_create.create(conn, it)) is not None
    calls.clear()
    made = on_connection(lambda conn: flash_create.create_many(conn, items))
    assert [m is not None for m in made] == [True, True, True, False, True, True, True, True]  # correct answers
    _check_answers(items, made)
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (3, 7)
    assert calls == [8, 7, 1]


# --- 5. a connection lost between two groups ----------------------------------------------------


def test_a_connection_lost_between_two_groups_loses_no_order_and_django_answers_each(
    sale, make_sku, buyers, monkeypatch, settings
):
    """A batch of two groups (the sale's, a plain SKU's). The first commits; the connection is
    killed before the second. The first group's items keep their orders (the gate answers them
    201); the second group's get None (one warning), were never written, and Django makes them.
    The broken connection goes back to the pool, which drops it."""
    settings.CREATE_GATE_CONNECTIONS = 1
    sku = make_sku(stock=5)
    on_sale = [_confirm(buyers[0], sale), _confirm(buyers[1], sale)]
    plain = [_confirm(buyers[2], sku=sku), _confirm(buyers[3], sku=sku)]
    items = [item(on_sale[0]), item(plain[0]), item(on_sale[1]), item(plain[1])]
    real = flash_create._run
    sent: list[int] = []

    async def killed_before_the_second(conn, group):
        sent.append(len(group))
        if len(sent) == 2:
            with psycopg.connect(_dsn(), autocommit=True) as killer:
                killer.execute("SELECT pg_terminate_backend(%s)", [conn.info.backend_pid])
        return await real(conn, group)

    monkeypatch.setattr(flash_create, "_run", killed_before_the_second)
    warned: list = []
    database = postgres.Database("kill-gate", "CREATE_GATE_CONNECTIONS")
    gate_creates = creates.batches(database, lambda what, exc: warned.append(what))

    async def main():
        try:
            await database.warm()
            pool = await database.pool()
            async with pool.connection() as held:  # hold the one connection: all four queue up
                tasks = [asyncio.ensure_future(creates.submit(it, 5.0)) for it in items]
                await asyncio.sleep(0.1)
                assert held is not None
            return await asyncio.gather(*tasks)
        finally:
            await creates.drain()
            await database.close()

    answers = asyncio.run(main())
    assert sent == [2, 2]  # one statement per group, the second never ran
    assert [a is not None for a in answers] == [True, False, True, False]
    _check_answers(items, answers)
    assert warned == ["a batch of creates failed"]
    kept = {o.order_key: o.pk for o in Order.objects.all()}
    assert set(kept) == {d["order_key"] for d in on_sale}  # the first group committed
    for buyer, draft in zip(buyers[2:], plain, strict=True):  # the second group's requests reach Django
        order, created = order_create(customer=buyer, order_key=draft["order_key"])
        assert created is True
    assert Order.objects.count() == 4
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (3, 2) and Sku.objects.get(pk=sku.pk).stock == 3
    assert flash_reservations.reservations_expire(now=timezone.now() + dt.timedelta(days=1)) == 0  # settled


def test_an_error_in_a_later_group_does_not_take_the_answers_of_a_committed_group(
    sale, make_sku, buyers, monkeypatch, settings
):
    """A batch's groups run one after another; when a later group's transaction fails with
    something other than a refusal (here QueryCanceled: pg_cancel_backend, or a server-side
    statement_timeout or lock_timeout while it waits for a busy SKU row), only that group's
    items get None (Django answers them). The group already committed keeps its answers: its
    requests get their 201 and the gate's after-commit work, not Django's replay (200)."""
    settings.CREATE_GATE_CONNECTIONS = 1
    sku = make_sku(stock=5)
    items = [
        item(_confirm(buyers[0], sale)),
        item(_confirm(buyers[1], sku=sku)),
        item(_confirm(buyers[2], sale)),
        item(_confirm(buyers[3], sku=sku)),
    ]
    warned: list = []
    answers = _while_a_row_is_held(
        "cancel-gate",
        "pg_cancel_backend",
        f"SELECT 1 FROM catalog_sku WHERE id = {sku.pk} FOR UPDATE",  # someone holds the SKU
        items,
        lambda what, exc: warned.append(type(exc).__name__),
    )
    committed = {it.draft.order_key for it in (items[0], items[2])}
    assert set(Order.objects.values_list("order_key", flat=True)) == committed  # the sale's group committed
    assert warned == ["QueryCanceled"]
    assert (answers[1], answers[3]) == (None, None)  # the cancelled group: nothing kept, Django answers
    status, _, body = django_create(_body({"order_key": items[0].draft.order_key}), _headers(buyers[0]))
    made_first = Order.objects.get(order_key=items[0].draft.order_key).order_no
    assert (status, json.loads(body)["order_no"]) == (200, made_first)  # what that request gets now: a replay
    # ... but the committed orders' own requests must get them:
    assert [a is not None for a in answers] == [True, False, True, False]
    _check_answers(items, answers)


def test_a_connection_killed_inside_a_groups_transaction_keeps_nothing_of_it(sale, buyers, settings):
    """The connection dies while the group's one message waits for the sale's row: PostgreSQL
    rolls the implicit transaction back whole (no order, allowance, sale or SKU change), every
    item gets None (one warning) and Django, asked next, makes each order exactly once."""
    settings.CREATE_GATE_CONNECTIONS = 1
    drafts_ = [_confirm(buyer, sale) for buyer in buyers[:3]]
    items = [item(d) for d in drafts_]
    warned: list = []
    answers = _while_a_row_is_held(
        "kill-gate",
        "pg_terminate_backend",
        f"SELECT 1 FROM marketing_flashsale WHERE id = {sale.pk} FOR UPDATE",
        items,
        lambda what, exc: warned.append(what),
    )
    assert answers == [None, None, None] and warned == ["a batch of creates failed"]
    assert Order.objects.count() == 0 and not FlashSalePurchase.objects.exists()
    sale.refresh_from_db()
    assert (sale.stock, sale.sold, Sku.objects.get(pk=sale.sku_id).stock) == (5, 0, 20)
    for buyer, draft in zip(buyers, drafts_, strict=False):
        assert order_create(customer=buyer, order_key=draft["order_key"])[1] is True
    sale.refresh_from_db()
    assert (sale.stock, sale.sold, Order.objects.count()) == (2, 3, 3)


def test_one_customer_in_two_batches_at_once_gets_the_limit_once(sale, buyers, failures):
    """limit_per_customer=1; A's two keys in two batches on two connections at once (with B and
    C): the customer's row lock puts them in line; exactly one of A's orders, B's and C's made."""
    FlashSale.objects.filter(pk=sale.pk).update(limit_per_customer=1)
    flash_quota.card_write(FlashSale.objects.get(pk=sale.pk))
    a = buyers[0]
    mine = _confirm(a, sale)
    one = [item(mine), item(_confirm(buyers[1], sale))]
    two = [item(_confirm(buyers[2], sale)), item(clone(mine))]
    out: dict[str, list] = {}
    _threads(
        lambda: out.__setitem__("one", on_connection(lambda c: flash_create.create_many(c, one))),
        lambda: out.__setitem__("two", on_connection(lambda c: flash_create.create_many(c, two))),
    )
    _check_answers(one, out["one"])
    _check_answers(two, out["two"])
    assert (out["one"][1] is not None, out["two"][0] is not None) == (True, True)
    assert [out["one"][0] is not None, out["two"][1] is not None].count(True) == 1
    assert Order.objects.filter(customer=a).count() == 1
    assert FlashSalePurchase.objects.get(customer=a).quantity == 1
    assert not [f for f in failures if f.startswith("DeadlockDetected")]
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (2, 3)


# --- 6. the wait limit with a real lock ----------------------------------------------------------


def test_items_queued_behind_a_blocked_batch_past_the_wait_go_to_django_unwritten(sale, buyers, settings):
    """One connection; its first batch waits on the sale's row (locked by someone else for
    1.5 s). Items arriving meanwhile are not taken within the 1 s wait: None, nothing written;
    the first item, already sent, still gets its order once the lock goes."""
    settings.CREATE_GATE_CONNECTIONS = 1
    items = [item(_confirm(buyer, sale)) for buyer in buyers[:3]]
    database = postgres.Database("wait-gate", "CREATE_GATE_CONNECTIONS")
    creates = postgres.Batches(database, flash_create.create_many, warn=lambda what, exc: None)
    locker = psycopg.connect(_dsn())
    locker.execute("SELECT 1 FROM marketing_flashsale WHERE id = %s FOR UPDATE", [sale.pk])
    threading.Timer(1.5, locker.commit).start()

    async def main():
        try:
            await database.warm()
            first = asyncio.ensure_future(creates.submit(items[0], 1.0))
            await asyncio.sleep(0.2)  # the first batch is in PostgreSQL, waiting on the lock
            started = time.monotonic()
            late = await asyncio.gather(*(creates.submit(it, 1.0) for it in items[1:]))
            waited = time.monotonic() - started
            return await first, late, waited
        finally:
            await creates.drain()
            await database.close()

    try:
        first, late, waited = asyncio.run(main())
    finally:
        time.sleep(0.05)
        locker.close()
    assert late == [None, None] and 0.9 < waited < 1.4
    assert first is not None and first.order.order_key == items[0].draft.order_key
    assert list(Order.objects.values_list("order_key", flat=True)) == [items[0].draft.order_key]
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (4, 1)


# --- 7. through the gate: every answer to its own request ---------------------------------------


def test_each_gate_answer_is_its_own_requests_order(sale, make_customer, make_sku, calls, settings):
    """Twelve winners' creates through ONE gate with one connection: 秒杀 and plain ones mixed,
    some customers twice. Every 201 names the request's key, the token's customer and the
    request's remark and amount; the creates went out in batches."""
    settings.CREATE_GATE_CONNECTIONS = 1
    freight.all_terms()
    sku = make_sku(stock=30)
    people = [buyer_with_address(make_customer, i) for i in range(6)]
    FlashSale.objects.filter(pk=sale.pk).update(stock=10)
    flash_quota.quota_load(sale.pk, force=True)
    requests, expected = [], []
    for n, buyer in enumerate(people):
        for draft in (_confirm(buyer, sale), _confirm(buyer, sku=sku, units=1 + n % 3)):
            remark = f"客户{buyer.pk}-{draft['order_key'][:6]}"
            requests.append((_body(draft, remark=remark), _headers(buyer)))
            expected.append((draft["order_key"], buyer.pk, remark, draft["pay_fen"]))
    order = list(range(len(requests)))
    random.Random(3).shuffle(order)
    gate = OrderGate(Inner())
    answers = run(gate, [requests[i] for i in order])
    assert [a[0] for a in answers] == [201] * len(requests) and gate.app.bodies == []
    assert max(calls) > 1  # batched
    for i, (_, _, body) in zip(order, answers, strict=True):
        data = json.loads(body)
        key, customer_id, remark, pay_fen = expected[i]
        row = Order.objects.get(order_no=data["order_no"])
        assert (row.order_key, row.customer_id, data["remark"], data["pay_fen"]) == (key, customer_id, remark, pay_fen)
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (4, 6)
