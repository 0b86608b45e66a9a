"""Winners' creates arriving together, made in one transaction per sale
(``apps.orders.flash_create.create_many``, sent by the create gate's ``postgres.Batches``).

Each order of a batch must equal the order the same customer's lone create makes, field by field
(the lone create is held equal to Django's ``order_create`` in ``test_flash_create.py``); a
refusal, a second order of a key or a deadlock inside a batch must give every item exactly the
answer its own transaction gives; batches on several connections and web nodes at once must sell
exactly the sale's stock.
"""

from __future__ import annotations

import asyncio
import json
import threading

import psycopg
import pytest
from django.conf import settings as django_settings
from django.db import models
from django.utils import timezone

from apps.catalog.models import Sku
from apps.marketing import flash_quota
from apps.marketing.models import FlashSale, FlashSalePurchase
from apps.orders import drafts, flash_create
from apps.orders.create import order_no_new, pay_deadline_of
from apps.orders.models import Order, OrderEvent, OrderLine
from apps.shipping import selectors as freight
from starmall.gates import postgres
from starmall.gates.orders import OrderGate
from tests.orders import test_flash_create as base
from tests.orders.test_flash_create import _body, _confirm, _headers, _quota, _rows, buyer_with_address, run
from tests.orders.test_soldout_gate import Inner

# the base module's fixtures, used here as they are there
sale, _patient_redis, _no_gate_connection_left = base.sale, base._patient_redis, base._no_gate_connection_left

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def item(draft: dict) -> flash_create.Create:
    """The create the gate would send for a confirmed ``draft`` (its dict as the API gave it)."""
    stored = drafts.OrderDraft.from_json(drafts.draft_get(draft["order_key"]))
    now = timezone.now()
    return flash_create.Create(
        draft=stored,
        customer_id=stored.customer_id,
        order_no=order_no_new(now),
        remark="",
        pay_deadline=pay_deadline_of(stored, now),
        now=now,
    )


def on_connection(work):
    """Run ``work(conn)`` (async) on an autocommit psycopg connection as the gate's pool opens
    them, closed afterwards; returns its result."""

    async def main():
        info = postgres.conninfo(django_settings.DATABASES["default"], application_name="starmall-test-gate")
        async with await psycopg.AsyncConnection.connect(info, autocommit=True) as conn:
            return await work(conn)

    return asyncio.run(main())


@pytest.fixture
def calls(monkeypatch) -> list[int]:
    """The number of items of every transaction ``flash_create`` sends."""
    seen: list[int] = []
    real = flash_create._run

    async def counted(conn, items):
        seen.append(len(items))
        return await real(conn, items)

    monkeypatch.setattr(flash_create, "_run", counted)
    return seen


@pytest.fixture
def buyers(make_customer):
    freight.all_terms()
    return [buyer_with_address(make_customer, i) for i in range(4)]


def test_a_batch_is_one_transaction_whose_orders_equal_lone_creates(sale, buyers, calls):
    FlashSale.objects.filter(pk=sale.pk).update(stock=8)
    flash_quota.quota_load(sale.pk, force=True)
    batch = [_confirm(buyer, sale) for buyer in buyers]
    alone = [_confirm(buyer, sale) for buyer in buyers]

    made = on_connection(lambda conn: flash_create.create_many(conn, [item(d) for d in batch]))
    assert calls == [4]
    assert [m.order.order_key for m in made] == [d["order_key"] for d in batch]  # answers in the items' order
    for draft in alone:
        on_connection(lambda conn, d=draft: flash_create.create(conn, item(d)))
    assert calls == [4, 1, 1, 1, 1]

    for mine, theirs, created in zip(batch, alone, made, strict=True):
        order_no = Order.objects.get(order_key=mine["order_key"]).order_no
        assert _rows(order_no) == _rows(Order.objects.get(order_key=theirs["order_key"]).order_no)
        assert created.order.order_no == order_no and created.order.pay_fen == mine["pay_fen"]
        assert [line.pk for line in created.lines] == list(
            OrderLine.objects.filter(order__order_no=order_no).order_by("id").values_list("id", flat=True)
        )
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (0, 8)
    assert made[-1].sold_out == [] and Sku.objects.get(pk=sale.sku_id).stock == 12
    assert sorted(FlashSalePurchase.objects.values_list("quantity", flat=True)) == [2, 2, 2, 2]
    assert OrderEvent.objects.count() == 8


def test_the_item_that_takes_the_last_unit_flags_the_sku(make_sku, buyers, calls):
    sku = make_sku(stock=3)
    batch = [_confirm(buyer, sku=sku) for buyer in buyers[:3]]
    made = on_connection(lambda conn: flash_create.create_many(conn, [item(d) for d in batch]))
    assert calls == [3]
    stock_after = {m.order.order_key: m.sold_out for m in made}
    # The items run by customer: the last customer's order took the last unit.
    last = max(made, key=lambda m: m.order.customer_id)
    assert stock_after[last.order.order_key] == [sku.pk]
    assert sum(1 for sold_out in stock_after.values() if sold_out) == 1
    assert Sku.objects.get(pk=sku.pk).stock == 0


def test_one_refusal_rolls_the_batch_back_and_each_item_gets_its_own_answer(sale, buyers, calls):
    batch = [_confirm(buyer, sale) for buyer in buyers]
    type(buyers[2]).objects.filter(pk=buyers[2].pk).update(is_active=False)  # its token not yet revoked

    made = on_connection(lambda conn: flash_create.create_many(conn, [item(d) for d in batch]))
    assert calls == [4, 3, 1]  # refused at the inactive customer: the others together again, it alone
    assert [m is not None for m in made] == [True, True, False, True]
    assert set(Order.objects.values_list("customer_id", flat=True)) == {buyers[i].pk for i in (0, 1, 3)}
    assert Order.objects.count() == 3 and OrderLine.objects.count() == 3 and OrderEvent.objects.count() == 3
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (2, 3)
    assert not FlashSalePurchase.objects.filter(customer=buyers[2]).exists()
    assert Sku.objects.get(pk=sale.sku_id).stock == 17


def test_more_winners_than_the_database_stock_sell_exactly_the_stock(sale, buyers, calls):
    batch = [_confirm(buyer, sale) for buyer in buyers]
    FlashSale.objects.filter(pk=sale.pk).update(stock=2)  # the quota says 1 left: too high, refusable only
    made = on_connection(lambda conn: flash_create.create_many(conn, [item(d) for d in batch]))
    assert calls == [4, 2, 1, 1]  # ran out at the third: the two before it together, the rest each alone
    assert sum(m is not None for m in made) == 2
    sale.refresh_from_db()
    assert (sale.stock, sale.sold, Order.objects.count()) == (0, 2, 2)
    assert sum(FlashSalePurchase.objects.values_list("quantity", flat=True)) == 2


def test_a_key_twice_in_one_batch_or_already_made_gives_one_order(sale, buyers, calls):
    first, second = _confirm(buyers[0], sale), _confirm(buyers[1], sale)
    on_connection(lambda conn: flash_create.create(conn, item(second)))  # its order exists already
    items = [item(first), item(first), item(second), item(_confirm(buyers[2], sale))]

    made = on_connection(lambda conn: flash_create.create_many(conn, items))
    assert calls == [1, 4, 1, 1, 1, 1]  # the batch hit the UNIQUE key, then each alone
    assert [m is not None for m in made].count(True) == 2 and made[2] is None
    assert Order.objects.filter(order_key=first["order_key"]).count() == 1
    assert Order.objects.count() == 3
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (2, 3)


def test_a_batch_of_several_shapes_runs_one_transaction_per_sale_and_skus(sale, make_sku, buyers, calls):
    sku = make_sku(stock=5)
    items = [
        item(_confirm(buyers[0], sale)),
        item(_confirm(buyers[1], sku=sku)),
        item(_confirm(buyers[2], sale)),
        item(_confirm(buyers[3], sku=sku, units=2)),
    ]
    made = on_connection(lambda conn: flash_create.create_many(conn, items))
    assert sorted(calls) == [2, 2] and all(m is not None for m in made)
    assert [m.order.flash_sale_id for m in made] == [sale.pk, None, sale.pk, None]
    assert Sku.objects.get(pk=sku.pk).stock == 2 and Sku.objects.get(pk=sale.sku_id).stock == 18


def test_batches_on_two_web_nodes_with_one_connection_each_sell_exactly_the_stock(sale, make_customer, calls, settings):
    """Two gates, one connection each: the winners' creates wait for it and go out in batches,
    both nodes' batches on the same sale's row at once; a quota above the database stock
    (refusals inside batches) still sells exactly the stock."""
    settings.CREATE_GATE_CONNECTIONS = 1
    freight.all_terms()
    people = [buyer_with_address(make_customer, i) for i in range(12)]
    FlashSale.objects.filter(pk=sale.pk).update(stock=12, limit_per_customer=1)
    flash_quota.quota_load(sale.pk, force=True)
    creates = [(_body(_confirm(buyer, sale)), _headers(buyer)) for buyer in people]
    FlashSale.objects.filter(pk=sale.pk).update(stock=9)  # three winners more than units
    nodes = [OrderGate(Inner()), OrderGate(Inner())]
    answers: dict[int, list] = {}

    def node(n: int) -> None:
        answers[n] = run(nodes[n], creates[n::2])

    threads = [threading.Thread(target=node, args=(n,)) for n in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    statuses = sorted(status for status, _, _ in answers[0] + answers[1])
    assert statuses == [200] * 3 + [201] * 9  # three passed to Django (Inner's 200), nothing kept for them
    assert max(calls) > 1  # winners waiting for the connection went out together
    sale.refresh_from_db()
    assert (sale.stock, sale.sold, Order.objects.filter(flash_sale=sale).count()) == (0, 9, 9)
    assert Sku.objects.get(pk=sale.sku_id).stock == 11
    assert sum(FlashSalePurchase.objects.values_list("quantity", flat=True)) == 9
    assert _quota(sale)[2] == 3  # the three refused reservations wait for Django (or the sweep) to give back
    assert {json.loads(body)["status"] for status, _, body in answers[0] + answers[1] if status == 201} == {"unpaid"}


def test_a_batch_takes_every_allowance_before_the_sale(sale, buyers, calls):
    """The lock order (``starmall/locking.py``, step 6): a transaction holding a buyer's allowance
    and then taking the sale — a cancelled 秒杀 order giving its units back does — must not meet a
    batch that already holds the sale and waits for that allowance: each would wait for the other
    until PostgreSQL's deadlock detector killed one. The batch takes all its allowances first,
    so it waits with the sale untouched and the other transaction finishes."""
    import time

    from django.db import connection, transaction

    earlier = _confirm(buyers[1], sale)
    on_connection(lambda conn: flash_create.create(conn, item(earlier)))  # buyers[1] has an allowance row
    batch = [item(_confirm(buyer, sale)) for buyer in buyers[:3]]
    held, outcome = threading.Event(), {}

    def give_back() -> None:
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL lock_timeout = '5s'")
                    FlashSalePurchase.objects.select_for_update().get(sale=sale, customer=buyers[1])
                    held.set()
                    for _ in range(100):  # until the batch waits for that allowance
                        cursor.execute(
                            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'starmall-test-gate' "
                            "AND wait_event_type = 'Lock'"
                        )
                        if cursor.fetchone()[0]:
                            break
                        time.sleep(0.02)
                    outcome["batch waited"] = True
                    FlashSale.objects.filter(pk=sale.pk).update(stock=models.F("stock") + 1, sold=models.F("sold") - 1)
            outcome["given back"] = True
        except Exception as exc:  # noqa: BLE001 - the assertion below shows it
            outcome["error"] = exc
        finally:
            connection.close()

    async def work(conn):
        await asyncio.get_running_loop().run_in_executor(None, held.wait, 5)
        return await flash_create.create_many(conn, batch)

    thread = threading.Thread(target=give_back)
    thread.start()
    made = on_connection(work)
    thread.join()
    assert outcome == {"batch waited": True, "given back": True}
    assert calls == [1, 3]  # one transaction for the batch: no deadlock rolled it back
    assert all(m is not None for m in made)
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (5 - 1 + 1 - 3, 1 - 1 + 3)
    assert FlashSalePurchase.objects.get(sale=sale, customer=buyers[1]).quantity == 2
