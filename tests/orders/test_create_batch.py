"""``apps.orders.create.orders_create``: creates that arrive together, made in as few transactions
as is safe.

A batch's orders equal, column for column, the orders the same drafts make alone; the sale's and
the SKU's rows are written once per transaction; a refusal answers exactly its own request and
gives its 秒杀 reservation back; a database error answers its own group only. Runs on SQLite and
PostgreSQL (the tests marked ``postgres`` race real connections).
"""

from __future__ import annotations

import datetime as dt
import re
import threading
import time
import uuid

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.accounts.models import Coupon, Customer
from apps.appointments.models import Booking
from apps.catalog import stock
from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Sku
from apps.marketing import flash_quota
from apps.marketing.exceptions import FlashSaleLimitExceeded, FlashSaleNotLive
from apps.marketing.models import FlashSale, FlashSalePurchase
from apps.orders import create, drafts
from apps.orders.confirm import order_confirm
from apps.orders.create import Created, CreateRequest, orders_create
from apps.orders.exceptions import CustomerInactive, OrderKeyExpired
from apps.orders.models import Order, OrderEvent, OrderLine
from apps.shipping import selectors as freight
from starmall.errors import LimitExceeded
from tests.orders import test_create_gate as base
from tests.orders.test_create_gate import _confirm, _quota, _rows, buyer_with_address

sale = base.sale  # the gate tests' fixture

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def calls(monkeypatch) -> list[tuple[str, ...]]:
    """The order keys of every transaction ``orders_create`` opens, in the order opened."""
    seen: list[tuple[str, ...]] = []
    real = create._transaction

    def recorded(items):
        seen.append(tuple(item.request.order_key for item in items))
        return real(items)

    monkeypatch.setattr(create, "_transaction", recorded)
    return seen


@pytest.fixture
def buyers(make_customer) -> list[Customer]:
    """Four buyers with an address, in id order (the order a shared transaction takes them in)."""
    freight.all_terms()
    return [buyer_with_address(make_customer, i) for i in range(4)]


def request(customer: Customer, draft: dict, remark: str = "") -> CreateRequest:
    return CreateRequest(customer.pk, draft["order_key"], remark)


def clone(draft: dict) -> dict:
    """The same draft under a new key, past Redis's quota (the database must judge it)."""
    key = uuid.uuid4().hex
    drafts.draft_save(key, {**drafts.draft_get(draft["order_key"]), "order_key": key})
    return {**draft, "order_key": key}


def updates(captured: CaptureQueriesContext, model) -> int:
    """How many UPDATE statements of ``model``'s table were sent."""
    pattern = re.compile(rf'^\s*UPDATE\s+"?{model._meta.db_table}"?\s', re.IGNORECASE)
    return sum(1 for query in captured.captured_queries if pattern.match(query["sql"]))


def _made(result, customer: Customer, draft: dict) -> Order:
    """``result`` is a new order of ``draft``'s key and customer; returns it."""
    assert isinstance(result, Created) and result.created, result
    assert (result.order.order_key, result.order.customer_id) == (draft["order_key"], customer.pk)
    return result.order


def _sale_books(of: FlashSale) -> tuple[int, int, int, dict]:
    of.refresh_from_db()
    allowances = dict(FlashSalePurchase.objects.filter(sale=of).values_list("customer_id", "quantity"))
    return of.stock, of.sold, Sku.objects.get(pk=of.sku_id).stock, allowances


def test_a_batch_of_winners_is_one_transaction_whose_orders_equal_lone_creates(sale, buyers, calls):
    FlashSale.objects.filter(pk=sale.pk).update(stock=8)
    flash_quota.quota_load(sale.pk, force=True)
    batch = [_confirm(buyer, sale) for buyer in buyers]
    alone = [_confirm(buyer, sale) for buyer in buyers]
    assert _quota(sale) == (0, {b.pk: 2 for b in buyers}, 8)
    requests = [request(b, d, remark=f"第{i}单") for i, (b, d) in enumerate(zip(buyers, batch, strict=True))][::-1]

    with CaptureQueriesContext(connection) as captured:
        results = orders_create(requests)
    assert len(calls) == 1 and sorted(calls[0]) == sorted(d["order_key"] for d in batch)
    assert (updates(captured, FlashSale), updates(captured, Sku)) == (1, 1)  # the hot rows once, for all four
    for result, req in zip(results, requests, strict=True):  # answers in the requests' order
        assert isinstance(result, Created) and result.created
        assert (result.order.order_key, result.order.customer_id, result.order.remark) == (
            req.order_key,
            req.customer_id,
            req.remark,
        )

    for buyer, draft in zip(buyers, alone, strict=True):
        [result] = orders_create([request(buyer, draft, remark=f"第{buyers.index(buyer)}单")])
        _made(result, buyer, draft)
    assert len(calls) == 5
    for mine, theirs in zip(batch, alone, strict=True):
        order = Order.objects.get(order_key=mine["order_key"])
        assert _rows(order.order_no) == _rows(Order.objects.get(order_key=theirs["order_key"]).order_no)
        assert (order.pay_fen, order.goods_fen, order.flash_sale_id) == (mine["pay_fen"], mine["goods_fen"], sale.pk)
    assert _sale_books(sale) == (0, 8, 12, {b.pk: 2 for b in buyers})
    assert OrderLine.objects.count() == OrderEvent.objects.count() == 8
    assert _quota(sale) == (0, {b.pk: 2 for b in buyers}, 0)  # every reservation settled, none given back
    assert all(drafts.draft_get(d["order_key"]) is None for d in batch + alone)


@pytest.mark.parametrize("spoil", ["caps", "allowance", "inactive"])
def test_one_item_refused_at_its_own_rows_is_refused_alone_and_the_others_commit_together(
    sale, buyers, make_sku, calls, settings, spoil
):
    drafts_ = [_confirm(buyer, sale) for buyer in buyers]
    spoiled = buyers[2]
    if spoil == "caps":
        settings.MAX_UNPAID_ORDERS = 1
        plain = order_confirm(customer=spoiled, items=[{"sku_id": make_sku(stock=5).pk, "quantity": 1}])
        _made(orders_create([request(spoiled, plain)])[0], spoiled, plain)
        calls.clear()
    elif spoil == "allowance":
        FlashSalePurchase.objects.create(sale=sale, customer=spoiled, quantity=2)  # the limit, bought elsewhere
    else:
        Customer.objects.filter(pk=spoiled.pk).update(is_active=False)  # its token not yet revoked
    expected = {"caps": LimitExceeded, "allowance": FlashSaleLimitExceeded, "inactive": CustomerInactive}[spoil]

    results = orders_create([request(b, d) for b, d in zip(buyers, drafts_, strict=True)])
    assert type(results[2]) is expected
    assert results[2].code == ("unauthenticated" if spoil == "inactive" else "limit_exceeded")
    orders = [_made(results[i], buyers[i], drafts_[i]) for i in (0, 1, 3)]
    others = tuple(drafts_[i]["order_key"] for i in (0, 1, 3))
    refused = (drafts_[2]["order_key"],)
    assert calls[0] == others[:2] + refused + others[2:]  # in customer order
    assert sorted(calls[1:]) == sorted([refused, others])  # it alone, the three others together
    assert not Order.objects.filter(order_key=refused[0]).exists()
    assert sorted(Order.objects.filter(flash_sale=sale).values_list("pk", flat=True)) == sorted(o.pk for o in orders)
    bought = {b.pk: 1 for b in buyers if b is not spoiled}
    assert _sale_books(sale) == (2, 3, 17, {**bought, **({spoiled.pk: 2} if spoil == "allowance" else {})})
    assert _quota(sale) == (2, bought, 0)  # three settled, the refused one's unit back in the quota
    assert drafts.draft_get(refused[0]) is not None  # kept: the customer may try again


def test_stock_for_only_some_creates_the_first_by_customer_and_key_and_refuses_the_rest(sale, buyers, calls):
    drafts_ = [_confirm(buyer, sale) for buyer in buyers]
    FlashSale.objects.filter(pk=sale.pk).update(stock=2)  # the quota says 1 left: too high, refusable only
    requests = [request(b, d) for b, d in zip(buyers, drafts_, strict=True)][::-1]

    results = orders_create(requests)[::-1]
    _made(results[0], buyers[0], drafts_[0])
    _made(results[1], buyers[1], drafts_[1])
    assert [type(r) for r in results[2:]] == [InsufficientStock, InsufficientStock]
    assert results[2].detail["flash_sale_id"] == sale.pk
    keys = [d["order_key"] for d in drafts_]
    # refused at the sale's row: halved, the first half first (it fits), then the second half's each
    assert calls == [tuple(keys), tuple(keys[:2]), tuple(keys[2:]), (keys[2],), (keys[3],)]
    assert _sale_books(sale) == (0, 2, 18, {buyers[0].pk: 1, buyers[1].pk: 1})
    assert Order.objects.count() == 2
    assert _quota(sale) == (3, {buyers[0].pk: 1, buyers[1].pk: 1}, 0)  # two units given back


def test_a_sku_short_for_the_batch_creates_the_first_and_flags_the_last_unit(buyers, make_sku, calls):
    from django.core.cache import cache

    from apps.catalog import soldout

    sku = make_sku(stock=3)
    units = [2, 1, 1]
    drafts_ = [_confirm(b, sku=sku, units=n) for b, n in zip(buyers, units, strict=False)]
    results = orders_create([request(b, d) for b, d in zip(buyers, drafts_, strict=False)])
    assert [len(c) for c in calls] == [3, 1, 2, 1, 1]  # halved: the first alone, then the other two
    _made(results[0], buyers[0], drafts_[0])
    _made(results[1], buyers[1], drafts_[1])
    assert isinstance(results[2], InsufficientStock) and results[2].detail["sku_id"] == sku.pk
    assert Sku.objects.get(pk=sku.pk).stock == 0 and Order.objects.count() == 2
    assert cache.get(soldout.sku_key(sku.pk)) is not None


def test_a_sale_ended_since_confirm_refuses_each_and_gives_every_reservation_back(sale, buyers, calls):
    drafts_ = [_confirm(buyer, sale) for buyer in buyers[:3]]
    assert _quota(sale) == (2, {b.pk: 1 for b in buyers[:3]}, 3)
    FlashSale.objects.filter(pk=sale.pk).update(ends_at=timezone.now() - dt.timedelta(seconds=1))
    results = orders_create([request(b, d) for b, d in zip(buyers, drafts_, strict=False)])
    assert [type(r) for r in results] == [FlashSaleNotLive] * 3
    assert [len(c) for c in calls] == [3, 1, 2, 1, 1]  # halved: the first alone, then the other two
    assert _sale_books(sale) == (5, 0, 20, {}) and Order.objects.count() == 0
    assert _quota(sale) == (5, {}, 0)


def test_one_customer_past_the_limit_inside_one_batch_gets_exactly_the_limit(sale, buyers, calls):
    a, b = buyers[:2]
    first = _confirm(a, sale)
    mine = [first, clone(first), clone(first)]  # three units of a limit of two
    theirs = _confirm(b, sale)
    results = orders_create([request(a, mine[0]), request(b, theirs), request(a, mine[1]), request(a, mine[2])])
    _made(results[1], b, theirs)
    of_a = [results[0], results[2], results[3]]
    assert sum(isinstance(r, Created) and r.created for r in of_a) == 2
    assert [type(r) for r in of_a if not isinstance(r, Created)] == [FlashSaleLimitExceeded]
    assert _sale_books(sale) == (2, 3, 17, {a.pk: 2, b.pk: 1})
    assert Order.objects.filter(customer=a).count() == 2


def test_the_same_key_twice_a_replay_and_another_customers_key_are_answered_in_place(sale, buyers, calls):
    a, b, c = buyers[:3]
    twice, made, foreign = _confirm(a, sale), _confirm(b, sale), _confirm(c, sale)
    earlier = _made(orders_create([request(b, made)])[0], b, made)
    calls.clear()

    results = orders_create([request(a, twice), request(b, made), request(a, twice), request(a, foreign)])
    assert [type(r) for r in results] == [Created, Created, Created, OrderKeyExpired]
    assert (results[0].created, results[2].created) == (True, False)  # one order of the key
    assert results[0].order.pk == results[2].order.pk == Order.objects.get(order_key=twice["order_key"]).pk
    assert (results[1].created, results[1].order.pk) == (False, earlier.pk)  # its draft gone: the replay
    assert calls == [(twice["order_key"],) * 2, (twice["order_key"],), (twice["order_key"],)]  # UNIQUE: each alone
    assert Order.objects.count() == 2 and OrderLine.objects.count() == 2
    assert _sale_books(sale) == (3, 2, 18, {a.pk: 1, b.pk: 1})
    assert _quota(sale) == (2, {a.pk: 1, b.pk: 1, c.pk: 1}, 1)  # c's reservation waits for c's own create


def test_sales_skus_coupons_and_slots_are_grouped_and_each_request_answered_in_order(
    sale, buyers, make_sku, consultation, calls
):
    other_sku = make_sku(stock=9)
    now = timezone.now()
    other = FlashSale.objects.create(
        title="第二场",
        sku=other_sku,
        price_fen=500,
        stock=3,
        limit_per_customer=1,
        starts_at=now - dt.timedelta(minutes=1),
        ends_at=now + dt.timedelta(hours=1),
    )
    flash_quota.card_write(other)
    plain = make_sku(stock=10, price_fen=20000)
    coupon = Coupon.objects.create(
        customer=buyers[3],
        title="满100减20",
        discount_fen=2000,
        min_spend_fen=10000,
        valid_until="2099-01-01T00:00+08:00",
    )
    slot = consultation.slots[2]
    wanted = [
        (buyers[3], _confirm(buyers[3], sale)),
        (buyers[0], _confirm(buyers[0], sku=plain, units=2)),
        (buyers[1], _confirm(buyers[1], other)),
        (buyers[2], _confirm(buyers[2], sale)),
        (
            buyers[3],
            order_confirm(customer=buyers[3], items=[{"sku_id": plain.pk, "quantity": 1}], coupon_id=coupon.pk),
        ),
        (
            buyers[1],
            order_confirm(customer=buyers[1], items=[{"sku_id": consultation.sku.pk, "quantity": 1}], slot_id=slot.pk),
        ),
        (buyers[2], _confirm(buyers[2], sku=plain)),
    ]
    keys = [d["order_key"] for _, d in wanted]

    results = orders_create([request(b, d) for b, d in wanted])
    for result, (buyer, draft) in zip(results, wanted, strict=True):
        assert _made(result, buyer, draft).pay_fen == draft["pay_fen"]
    assert sorted(calls) == sorted(
        [(keys[3], keys[0]), (keys[1], keys[6]), (keys[2],), (keys[4],), (keys[5],)]
    )  # a sale's creates together (by customer), a plain SKU's together, the rest alone
    assert _sale_books(sale)[:2] == (3, 2) and _sale_books(other)[:2] == (2, 1)
    assert Sku.objects.get(pk=plain.pk).stock == 6 and Sku.objects.get(pk=other_sku.pk).stock == 8
    assert Coupon.objects.get(pk=coupon.pk).used_order_no == results[4].order.order_no
    assert Booking.objects.get(slot=slot).order_no == results[5].order.order_no
    assert Booking.objects.filter(slot_id=slot.pk, live=True).count() == 1


@pytest.mark.parametrize("broken", ["sale", "plain"])
def test_a_database_error_answers_its_own_group_and_writes_nothing_of_it(
    sale, buyers, make_sku, calls, monkeypatch, broken
):
    plain = make_sku(stock=10)
    on_sale = [(b, _confirm(b, sale)) for b in buyers[:2]]
    on_plain = [(b, _confirm(b, sku=plain)) for b in buyers[2:]]
    wanted = [on_sale[0], on_plain[0], on_sale[1], on_plain[1]]
    failing = sale.sku_id if broken == "sale" else plain.pk
    real = stock.sku_stock_decrement

    def decrement(*, quantities):
        if failing in quantities:
            raise DatabaseError("the server closed the connection unexpectedly")
        return real(quantities=quantities)

    monkeypatch.setattr(stock, "sku_stock_decrement", decrement)
    results = orders_create([request(b, d) for b, d in wanted])
    bad = [0, 2] if broken == "sale" else [1, 3]
    assert all(results[i] is results[bad[0]] for i in bad) and isinstance(results[bad[0]], DatabaseError)
    for i in {0, 1, 2, 3} - set(bad):
        _made(results[i], *wanted[i])
    assert Order.objects.count() == 2 and not Order.objects.filter(
        order_key__in=[wanted[i][1]["order_key"] for i in bad]
    )
    if broken == "sale":
        assert _sale_books(sale) == (5, 0, 20, {}) and Sku.objects.get(pk=plain.pk).stock == 8
        assert _quota(sale) == (3, {b.pk: 1 for b in buyers[:2]}, 2)  # held for the answer Django gives
    else:
        assert _sale_books(sale) == (3, 2, 18, {b.pk: 1 for b in buyers[:2]})
        assert Sku.objects.get(pk=plain.pk).stock == 10 and _quota(sale) == (3, {b.pk: 1 for b in buyers[:2]}, 0)
    assert all(drafts.draft_get(wanted[i][1]["order_key"]) is not None for i in bad)
    monkeypatch.undo()
    again = orders_create([request(*wanted[i]) for i in bad])  # Django's create, next
    for result, i in zip(again, bad, strict=True):
        _made(result, *wanted[i])
    assert Order.objects.count() == 4


# --- real connections at once (PostgreSQL) ------------------------------------------------------


def _threads(*targets) -> None:
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
        t.join(30)
    assert not any(t.is_alive() for t in threads), "a thread is stuck"
    assert errors == [], errors


@pytest.mark.postgres
def test_two_batches_of_one_sale_at_once_sell_exactly_the_stock_within_each_limit(sale, make_customer):
    freight.all_terms()
    people = [buyer_with_address(make_customer, i) for i in range(6)]
    FlashSale.objects.filter(pk=sale.pk).update(stock=7, limit_per_customer=2)
    flash_quota.quota_load(sale.pk, force=True)
    first = {p.pk: _confirm(p, sale) for p in people[:4]}
    wanted = [(p, clone(first[p.pk])) for p in people[:4]] + [(p, _confirm(p, sale)) for p in people[4:]]
    wanted += [(p, clone(first[p.pk])) for p in people[:4]]  # each of the first four: three units
    one, two = wanted[0::2], wanted[1::2]
    out: dict[str, list] = {}
    _threads(
        lambda: out.__setitem__("one", orders_create([request(p, d) for p, d in one])),
        lambda: out.__setitem__("two", orders_create([request(p, d) for p, d in two])),
    )
    answers = list(zip(one, out["one"], strict=True)) + list(zip(two, out["two"], strict=True))
    made = [(p, d) for (p, d), r in answers if isinstance(r, Created)]
    assert all(isinstance(r, (Created, InsufficientStock, LimitExceeded)) for _, r in answers), answers
    assert len(made) == 7 == Order.objects.count()
    for p, d in made:
        assert Order.objects.get(order_key=d["order_key"]).customer_id == p.pk
    stock_, sold, sku_stock, allowances = _sale_books(sale)
    assert (stock_, sold, sku_stock) == (0, 7, 13)
    assert all(n <= 2 for n in allowances.values()) and sum(allowances.values()) == 7
    assert allowances == {c: Order.objects.filter(customer_id=c).count() for c in allowances}


@pytest.mark.postgres
def test_a_batch_takes_every_allowance_before_the_sale_and_waits_instead_of_deadlocking(sale, buyers, calls):
    """Lock step 6: a transaction holding buyer 1's allowance then writes the sale (a cancelled
    秒杀 order giving its units back). The batch must take all its allowances before the sale,
    so it waits with the sale untouched and commits as ONE transaction after the other."""
    earlier = _confirm(buyers[1], sale)
    _made(orders_create([request(buyers[1], earlier)])[0], buyers[1], earlier)
    calls.clear()
    batch = [(b, _confirm(b, sale)) for b in buyers[:3]]
    held, outcome, results = threading.Event(), {}, {}

    def give_back() -> None:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '5s'")
                FlashSalePurchase.objects.select_for_update().get(sale=sale, customer=buyers[1])
                held.set()
                outcome["batch waited"] = _wait_for_a_lock_wait(cursor)
                FlashSale.objects.filter(pk=sale.pk).update(stock=F("stock") + 1, sold=F("sold") - 1)
                FlashSalePurchase.objects.filter(sale=sale, customer=buyers[1]).update(quantity=0)
        outcome["given back"] = True

    def batch_create() -> None:
        held.wait(5)
        results["batch"] = orders_create([request(b, d) for b, d in batch])

    _threads(give_back, batch_create)
    assert outcome == {"batch waited": True, "given back": True}
    assert len(calls) == 1  # one transaction: no deadlock rolled it back
    assert all(_made(r, b, d) for r, (b, d) in zip(results["batch"], batch, strict=True))
    assert _sale_books(sale) == (5 - 1 + 1 - 3, 1 - 1 + 3, 20 - 4, {b.pk: 1 for b in buyers[:3]})


def _wait_for_a_lock_wait(cursor, timeout: float = 5.0) -> bool:
    """True once another backend of this database waits for a lock (``cursor`` may be inside a
    transaction: the activity snapshot it caches is dropped before each look)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'"
        )
        if cursor.fetchone()[0]:
            return True
        time.sleep(0.02)
    return False
