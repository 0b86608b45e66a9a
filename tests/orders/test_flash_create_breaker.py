"""Adversarial tests of the create gate (starmall.gates.order_create / flash_create).

Each test states what Django's ``order_create`` + view would do and checks the gate against it.
"""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from django.utils import timezone
from django_redis import get_redis_connection

from apps.accounts.models import Address
from apps.catalog.models import Product, Sku
from apps.marketing.models import FlashSale, FlashSalePurchase
from apps.orders import drafts
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from apps.orders.models import Order, OrderLine
from apps.shipping import selectors as freight
from starmall.gates import postgres
from starmall.gates.orders import OrderGate
from tests.orders import test_flash_create as base
from tests.orders.test_flash_create import (
    _answer,
    _body,
    _confirm,
    _headers,
    _quota,
    _rows,
    buyer_with_address,
    django_create,
    run,
)
from tests.orders.test_soldout_gate import Inner

# the base module's fixtures, used here as they are there
sale, ready, _patient_redis, _no_gate_connection_left = (
    base.sale,
    base.ready,
    base._patient_redis,
    base._no_gate_connection_left,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


# --- 1. the create throttle ----------------------------------------------------------------


def test_throttle_django_429_but_gate_creates(customer, ready, make_sku, monkeypatch, settings):
    """THROTTLE_ORDER_CREATE: Django answers 429 to the (n+1)-th create in the window; the gate
    reads the same history and passes such a create to Django."""
    from apps.orders.api.views import OrderCreateThrottle

    monkeypatch.setattr(OrderCreateThrottle, "rate", "1/min", raising=False)
    settings.MAX_UNPAID_ORDERS = 20
    sku = make_sku(stock=50)
    headers = _headers(customer)
    first = _confirm(customer, sku=sku)
    assert django_create(_body(first), headers)[0] == 201  # the one create the window allows

    second, third = _confirm(customer, sku=sku), _confirm(customer, sku=sku)
    # Django, for the very same request:
    status, _, body = django_create(_body(second), headers)
    assert (status, json.loads(body)["code"]) == (429, "throttled")
    assert Order.objects.count() == 1
    # The gate, for the same kind of request from the same customer in the same window:
    gate = OrderGate(Inner())
    answers = run(gate, [(_body(second), headers), (_body(third), headers)])
    # Django's answer to both is 429: the gate must not create them (it may pass them on)
    assert [a[2] for a in answers] == [b"django", b"django"]
    assert Order.objects.count() == 1


def test_gate_creates_are_not_counted_by_djangos_throttle(customer, ready, make_sku, monkeypatch, settings):
    from apps.orders.api.views import OrderCreateThrottle

    monkeypatch.setattr(OrderCreateThrottle, "rate", "2/min", raising=False)
    settings.MAX_UNPAID_ORDERS = 20
    sku = make_sku(stock=50)
    headers = _headers(customer)
    gate = OrderGate(Inner())
    statuses = [run(gate, [(_body(_confirm(customer, sku=sku)), headers)])[0][0] for _ in range(5)]
    assert statuses.count(201) == 2  # the window's two, then passed on
    # and Django's own throttle sees the gate's creates
    assert django_create(_body(_confirm(customer, sku=sku)), headers)[0] == 429


# --- 2. remarks: what the gate keeps and how it writes it --------------------------------

NASTY = [
    "   ",
    "x" * 200,
    "  " + "x" * 200 + "\t",
    "x" * 201,
    "😀" * 200,
    "😀" * 201,
    "\u3000周末送达\u3000",
    "\u200b",
    "\x1c abc \x1f",
    "\x85nel\x85",
    "a\u2028b\u2029c",
    "'; DROP TABLE orders_order; --",
    "\\' OR '1'='1",
    "\\",
    "%s %(x)s %% %",
    "$$ $tag$ E'\\x00'",
    "a\r\nb",
    "\x7f",
    "e\u0301\U0001f468\u200d\U0001f469",
]


def _drf_bytes(data) -> bytes:
    from rest_framework.renderers import JSONRenderer

    return JSONRenderer().render(data)


@pytest.mark.parametrize("remark", NASTY, ids=range(len(NASTY)))
def test_remark_gate_equals_django(customer, ready, make_sku, settings, remark):
    settings.MAX_UNPAID_ORDERS = 20
    sku = make_sku(stock=50)
    headers = _headers(customer)
    by_gate, by_django = _confirm(customer, sku=sku), _confirm(customer, sku=sku)
    gate = OrderGate(Inner())
    [answer] = run(gate, [(_body(by_gate, remark=remark), headers)])
    django = django_create(_body(by_django, remark=remark), headers)
    if answer[2] == b"django":  # passed on: Django answers this one itself
        return
    assert answer[0] == django[0]
    assert _answer(answer) == _answer(django)
    mine, theirs = json.loads(answer[2]), json.loads(django[2])
    assert _rows(mine["order_no"]) == _rows(theirs["order_no"])
    assert Order.objects.get(order_no=mine["order_no"]).remark == remark.strip()
    # byte for byte: what DRF's renderer writes for the gate's own data
    assert answer[2] == _drf_bytes(mine)
    assert int(answer[1]["content-length"]) == len(_drf_bytes(mine))


# --- 3. quoting: names, specs, address in the draft ------------------------------------------

EVIL = "O'Brien \\' \"q\" %s %% $$ $a$ E'\\\\' ); DROP TABLE orders_order; -- \u2028 😀 \\x00"


def test_evil_strings_in_name_specs_address_round_trip(customer, make_sku, settings):
    settings.MAX_UNPAID_ORDERS = 20
    Address.objects.create(
        customer=customer,
        name=EVIL[:20],
        phone="13800000000",
        province="浙江省",
        city="杭州市",
        district=EVIL[:30],
        detail=EVIL,
        is_default=True,
    )
    from apps.accounts import address_cards

    address_cards.card_refresh(customer.pk)
    freight.all_terms()
    specs = {EVIL: EVIL, "n": [1, None, True, 1.5, {"'": "\\"}], "k'": 'v\\"'}
    sku = make_sku(stock=50, name=EVIL[:60], specs=specs)
    headers = _headers(customer)
    by_gate, by_django = _confirm(customer, sku=sku), _confirm(customer, sku=sku)
    gate = OrderGate(Inner())
    [answer] = run(gate, [(_body(by_gate, remark=EVIL), headers)])
    django = django_create(_body(by_django, remark=EVIL), headers)
    assert answer[0] == 201 and django[0] == 201
    mine = json.loads(answer[2])
    assert _rows(mine["order_no"]) == _rows(json.loads(django[2])["order_no"])
    order = Order.objects.get(order_no=mine["order_no"])
    assert order.remark == EVIL and order.address == by_gate["address"]
    line = OrderLine.objects.get(order=order)
    assert (line.name, line.specs) == (EVIL[:60], specs)
    assert Order.objects.count() == 2  # the table is still there


# --- 4. the caps under real concurrency --------------------------------------------------------


def _threads(targets):
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.mark.parametrize("nodes", [1, 3])
def test_caps_hold_under_concurrent_creates_of_one_customer(customer, ready, make_sku, settings, nodes):
    settings.MAX_UNPAID_ORDERS = 2
    settings.CREATE_GATE_CONNECTIONS = 8
    skus = [make_sku(stock=50) for _ in range(3)]
    headers = _headers(customer)
    # confirm checks the caps too; with none unpaid every confirm passes
    bodies = [_body(_confirm(customer, sku=skus[i % 3])) for i in range(12)]
    gates = [OrderGate(Inner()) for _ in range(nodes)]
    answers = {}

    def node(n):
        answers[n] = run(gates[n], [(b, headers) for b in bodies[n::nodes]])

    _threads([lambda n=n: node(n) for n in range(nodes)])
    statuses = sorted(a[0] for n in answers for a in answers[n])
    assert Order.objects.filter(customer=customer).count() == 2
    assert statuses == [200] * 10 + [201] * 2
    assert sum(Sku.objects.filter(pk__in=[s.pk for s in skus]).values_list("stock", flat=True)) == 150 - 2


def test_caps_with_gate_and_django_at_once(customer, ready, make_sku, settings):
    settings.MAX_UNPAID_ORDERS = 1
    sku = make_sku(stock=50)
    headers = _headers(customer)
    bodies = [_body(_confirm(customer, sku=sku)) for _ in range(6)]
    gate = OrderGate(Inner())
    out = {}

    def via_gate():
        out["gate"] = run(gate, [(b, headers) for b in bodies[:3]])

    def via_django():
        out["django"] = [django_create(b, headers) for b in bodies[3:]]
        from django.db import connection

        connection.close()

    _threads([via_gate, via_django])
    assert Order.objects.filter(customer=customer).count() == 1, (out,)
    assert Sku.objects.get(pk=sku.pk).stock == 49


# --- 5. one key, gate and Django at once (the gate's passes reach the real Django) ----------


def _real_stack():
    """The gate in front of Django as ``starmall/asgi.py`` builds it; each request's database
    connection is closed in its thread afterwards (else a2wsgi's threads keep theirs open and
    hold the test database at its teardown)."""
    from a2wsgi import WSGIMiddleware
    from django.core.wsgi import get_wsgi_application
    from django.db import connections

    django = get_wsgi_application()

    def closing(environ, start_response):
        try:
            return list(django(environ, start_response))
        finally:
            connections.close_all()

    return OrderGate(WSGIMiddleware(closing, workers=4))


@pytest.mark.parametrize("attempt", range(3))
def test_one_key_through_gate_and_django_at_once(customer, ready, sale, attempt):
    headers = _headers(customer)
    draft = _confirm(customer, sale)
    stack = _real_stack()
    out = {}

    def via_gate():
        out["gate"] = run(stack, [(_body(draft), headers)] * 4)

    def via_django():
        out["django"] = [django_create(_body(draft), headers) for _ in range(2)]
        from django.db import connection

        connection.close()

    _threads([via_django, via_gate])
    statuses = sorted(a[0] for a in out["gate"] + out["django"])
    assert statuses == [200] * 5 + [201], statuses
    bodies = {json.loads(a[2])["order_no"] for a in out["gate"] + out["django"]}
    assert len(bodies) == 1
    assert Order.objects.filter(order_key=draft["order_key"]).count() == 1
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (4, 1)
    assert FlashSalePurchase.objects.get().quantity == 1
    assert Sku.objects.get(pk=sale.sku_id).stock == 19
    assert _quota(sale) == (4, {customer.pk: 1}, 0)
    assert drafts.draft_get(draft["order_key"]) is None


# --- 6. forged / odd drafts in Redis ---------------------------------------------------------


def _forge(order_key: str, **line):
    stored = drafts.draft_get(order_key)
    stored["lines"][0].update(line)
    drafts.draft_save(order_key, stored)


def test_forged_zero_quantity_line_django_refuses_gate_creates(customer, ready, make_sku):
    """A draft line of 0 units: order_create raises ValueError (sku_stock_decrement; nothing
    kept); the gate does not take such a draft. Needs a forged draft (Redis write access)."""
    sku = make_sku(stock=10)
    headers = _headers(customer)
    draft = _confirm(customer, sku=sku)
    _forge(draft["order_key"], quantity=0, amount_fen=0)
    with pytest.raises(ValueError):
        order_create(customer=customer, order_key=draft["order_key"])
    assert Order.objects.count() == 0
    [answer] = run(OrderGate(Inner()), [(_body(draft), headers)])
    assert answer[2] == b"django" and Order.objects.count() == 0


def test_forged_zero_units_flash_draft(customer, ready, sale):
    headers = _headers(customer)
    draft = _confirm(customer, sale)
    _forge(draft["order_key"], quantity=0, amount_fen=0)
    with pytest.raises(ValueError):  # flash_sale_take: units must be positive
        order_create(customer=customer, order_key=draft["order_key"])
    [answer] = run(OrderGate(Inner()), [(_body(draft), headers)])
    assert answer[2] == b"django" and Order.objects.count() == 0


@pytest.mark.parametrize("flash", [False, True])
def test_forged_negative_quantity_is_stopped_by_the_check_constraints(customer, ready, make_sku, sale, flash):
    """Negative units would ADD stock in the gate's UPDATEs (stock - -3); the lines' CHECK
    constraints (quantity >= 0, amount >= 0) roll the whole statement back first."""
    sku = make_sku(stock=10)
    headers = _headers(customer)
    draft = _confirm(customer, sale) if flash else _confirm(customer, sku=sku)
    _forge(draft["order_key"], quantity=-3)
    [answer] = run(OrderGate(Inner()), [(_body(draft), headers)])
    assert answer[2] == b"django" and Order.objects.count() == 0
    assert Sku.objects.get(pk=sku.pk).stock == 10 and FlashSale.objects.get(pk=sale.pk).stock == 5


def test_draft_whose_inner_key_differs_from_its_redis_key(customer, ready, make_sku):
    """A draft stored under K1 whose order_key field says K2 (forged): the gate leaves it to
    Django (which makes order K2 and drops draft K1, so a replay of K1 is 410)."""
    sku = make_sku(stock=10)
    headers = _headers(customer)
    d1 = _confirm(customer, sku=sku)
    k2 = "f" * 32
    drafts.draft_save(d1["order_key"], {**drafts.draft_get(d1["order_key"]), "order_key": k2})
    [answer] = run(OrderGate(Inner()), [(_body(d1), headers)])
    assert answer[2] == b"django" and Order.objects.count() == 0
    assert django_create(_body(d1), headers)[0] == 201
    assert list(Order.objects.values_list("order_key", flat=True)) == [k2]
    assert drafts.draft_get(d1["order_key"]) is None
    assert django_create(_body(d1), headers)[0] == 410


def test_multi_sku_draft_second_sku_short_leaves_first_untouched(customer, ready, make_sku, settings):
    a, b = make_sku(stock=50), make_sku(stock=50)
    if b.pk < a.pk:
        a, b = b, a
    headers = _headers(customer)
    items = [{"sku_id": b.pk, "quantity": 2}, {"sku_id": a.pk, "quantity": 3}]  # not in id order
    draft = order_confirm(customer=customer, items=items)
    Sku.objects.filter(pk=b.pk).update(stock=1)  # the LAST SKU in id order is short
    gate = OrderGate(Inner())
    [answer] = run(gate, [(_body(draft), headers)])
    assert answer[2] == b"django"
    assert Sku.objects.get(pk=a.pk).stock == 50 and Order.objects.count() == 0
    status, _, body = django_create(_body(draft), headers)
    assert (status, json.loads(body)["code"]) == (409, "insufficient_stock")

    Sku.objects.filter(pk=b.pk).update(stock=50)
    Product.objects.filter(pk=a.product_id).update(is_active=False)
    [answer] = run(gate, [(_body(draft), headers)])
    assert answer[2] == b"django" and Sku.objects.get(pk=b.pk).stock == 50
    Product.objects.filter(pk=a.product_id).update(is_active=True)
    Sku.objects.filter(pk=a.pk).update(stock=6)
    by_django = order_confirm(customer=customer, items=items)
    [answer] = run(gate, [(_body(draft), headers)])
    django = django_create(_body(by_django), headers)
    assert answer[0] == 201 and _answer(answer) == _answer(django)
    assert [line["sku_id"] for line in json.loads(answer[2])["lines"]] == [b.pk, a.pk]
    assert (Sku.objects.get(pk=a.pk).stock, Sku.objects.get(pk=b.pk).stock) == (0, 46)
    from django.core.cache import cache

    from apps.catalog import soldout

    assert get_redis_connection("default").get(cache.make_key(soldout.sku_key(a.pk))) == b"1"
    assert get_redis_connection("default").get(cache.make_key(soldout.sku_key(b.pk))) is None


# --- 7. PostgreSQL unreachable, the pool -----------------------------------------------------


def test_postgres_refusing_connections_passes_to_django_in_time(customer, ready, sale, monkeypatch):
    import time

    real = postgres.conninfo
    monkeypatch.setattr(postgres, "conninfo", lambda db, **kw: real({**db, "PORT": 1}, **kw))  # nothing listens there
    headers = _headers(customer)
    drafts_ = [_confirm(customer, sale) for _ in range(2)]
    gate = OrderGate(Inner())
    t0 = time.monotonic()
    answers = run(gate, [(_body(d), headers) for d in drafts_])
    took = time.monotonic() - t0
    assert [a[2] for a in answers] == [b"django", b"django"]
    assert sorted(gate.app.bodies) == sorted(_body(d) for d in drafts_)
    assert Order.objects.count() == 0 and not FlashSalePurchase.objects.exists()
    assert _quota(sale) == (3, {customer.pk: 2}, 2)  # reservations untouched: Django decides
    assert took < 5


def test_one_pool_per_loop_even_when_many_first_requests_race(settings):
    db = postgres.Database("create-gate", "CREATE_GATE_CONNECTIONS")

    async def main():
        pools = await asyncio.gather(*(db.pool() for _ in range(50)))
        n = len({id(p) for p in pools})
        await db.close()
        return n

    assert asyncio.run(main()) == 1


# --- 8. a mixed storm: gate nodes (real Django behind) and Django threads, one sale --------------


def test_mixed_storm_conserves_units_and_bookkeeping(make_customer, make_sku, settings):

    from apps.marketing import flash_quota

    freight.all_terms()
    now = timezone.now()
    sale = FlashSale.objects.create(
        title="限时秒杀",
        sku=make_sku(stock=20),
        price_fen=9900,
        stock=6,
        limit_per_customer=3,
        starts_at=now - timezone.timedelta(minutes=5),
        ends_at=now + timezone.timedelta(hours=1),
    )
    flash_quota.card_write(sale)
    flash_quota.quota_load(sale.pk)
    r = get_redis_connection("default")
    r.set(flash_quota.key(sale.pk, "quota"), 100)  # Redis lets everybody through: PostgreSQL decides
    FlashSale.objects.filter(pk=sale.pk).update(limit_per_customer=2)  # the card still says 3
    people, requests = [], []
    for i in range(8):
        buyer = buyer_with_address(make_customer, i)
        h = _headers(buyer)
        for _ in range(3):
            requests.append((_body(_confirm(buyer, sale)), h))
        people.append(buyer)
    drafted = 24
    assert _quota(sale)[0] == 100 - drafted
    nodes = [_real_stack(), _real_stack()]
    out = {}

    def node(n):
        out[n] = run(nodes[n], requests[n::3])

    def django_thread():
        out[2] = [django_create(b, h) for b, h in requests[2::3]]
        from django.db import connection

        connection.close()

    _threads([lambda: node(0), lambda: node(1), django_thread])
    answers = out[0] + out[1] + out[2]
    codes = sorted((a[0], json.loads(a[2]).get("code")) for a in answers)
    assert all(a[0] in (201, 409) for a in answers), codes
    sale = FlashSale.objects.get(pk=sale.pk)
    orders = Order.objects.filter(flash_sale=sale)
    units = sum(OrderLine.objects.filter(order__in=orders).values_list("quantity", flat=True))
    assert sale.stock + sale.sold == 6 and sale.sold == units == orders.count() == 6
    assert sum(1 for a in answers if a[0] == 201) == 6
    assert Sku.objects.get(pk=sale.sku_id).stock == 20 - units
    for buyer in people:
        n = orders.filter(customer=buyer).count()
        held = FlashSalePurchase.objects.filter(customer=buyer).values_list("quantity", flat=True).first() or 0
        assert n == held <= 2
    quota, held, res = _quota(sale)
    assert res == 0  # every reservation settled or given back
    assert quota == 100 - units
    assert held == {b.pk: orders.filter(customer=b).count() for b in people if orders.filter(customer=b).exists()}
    made = set(orders.values_list("order_key", flat=True))
    assert all(drafts.draft_get(k) is None for k in made)  # the drafts of the orders made are gone


# --- 9. U+2028 / U+2029: DRF's JSONRenderer escapes them, the gates' _json_body does not --------


def test_line_separator_in_the_address_is_escaped_by_both_gates_as_drf_does(customer, sale, make_customer):
    from apps.accounts import address_cards

    Address.objects.create(
        customer=customer,
        name="张三",
        phone="13800000000",
        province="浙江省",
        city="杭州市",
        detail="文三路\u2028100号\u2029",
        is_default=True,
    )
    address_cards.card_refresh(customer.pk)
    freight.all_terms()
    headers = _headers(customer)
    confirm = json.dumps({"items": [{"sku_id": sale.sku_id, "quantity": 1}], "flash_sale_id": sale.pk}).encode()
    gate = OrderGate(Inner())
    [c] = run(gate, [(confirm, headers)], path="/api/v1/orders/confirm")
    assert c[0] == 200 and gate.app.bodies == []
    draft = json.loads(c[2])
    [o] = run(gate, [(_body(draft), headers)])
    assert o[0] == 201
    # byte for byte what Django's renderer writes for the very same data (escaped U+2028/9):
    assert c[2] == _drf_bytes(draft) and b"\\u2028" in c[2]
    assert o[2] == _drf_bytes(json.loads(o[2])) and int(o[1]["content-length"]) == len(o[2])


def test_revoked_token_reaches_django(customer, ready, sale):
    from apps.accounts.tokens import token_revoke

    headers = _headers(customer)
    draft = _confirm(customer, sale)
    token_revoke(headers["Authorization"].split()[1])
    gate = OrderGate(Inner())
    assert run(gate, [(_body(draft), headers)])[0][2] == b"django"
    status, _, body = django_create(_body(draft), headers)
    assert status == 401 and Order.objects.count() == 0


def test_bookkeeping_after_gate_and_django_creates_and_refusals(customer, ready, sale, make_customer):
    from django.core.cache import cache

    from apps.marketing import flash_quota

    r = get_redis_connection("default")
    headers = _headers(customer)
    by_gate, by_django = _confirm(customer, sale), _confirm(customer, sale)
    assert r.zcard(flash_quota.due_key()) == 2
    gate = OrderGate(Inner())
    assert run(gate, [(_body(by_gate), headers)])[0][0] == 201
    assert django_create(_body(by_django), headers)[0] == 201
    assert r.zcard(flash_quota.due_key()) == 0
    assert _quota(sale) == (3, {customer.pk: 2}, 0)
    # the last units: sale stock to 0 in PostgreSQL, SKU flag only when the SKU itself hits 0
    Sku.objects.filter(pk=sale.sku_id).update(stock=1)
    other = make_customer()
    Address.objects.create(
        customer=other,
        name="买家",
        phone="13800000000",
        province="浙江省",
        city="杭州市",
        detail="1号",
        is_default=True,
    )
    d = _confirm(other, sale)
    [a] = run(gate, [(_body(d), _headers(other))])
    assert a[0] == 201
    assert r.get(cache.make_key(f"soldout:sku:{sale.sku_id}")) == b"1"  # the SKU hit 0: flagged
    assert r.zcard(flash_quota.due_key()) == 0
    assert _quota(sale) == (2, {customer.pk: 2, other.pk: 1}, 0)


# --- 10. every refusal through the real stack: nothing kept, Django's 409, the unit back ---------


@pytest.mark.parametrize(
    ("spoil", "code"),
    [
        ("sale_paused", "invalid_state"),
        ("sale_later", "invalid_state"),
        ("sale_over", "invalid_state"),
        ("sku_off", "insufficient_stock"),
        ("product_off", "insufficient_stock"),
        ("sku_short", "insufficient_stock"),
        ("sale_short", "insufficient_stock"),
        ("allowance", "limit_exceeded"),
        ("caps", "limit_exceeded"),
    ],
)
def test_each_refusal_through_the_real_stack(customer, ready, sale, make_sku, settings, spoil, code):
    from apps.catalog.models import Product

    headers = _headers(customer)
    draft = _confirm(customer, sale)
    now = timezone.now()
    if spoil == "sale_paused":
        FlashSale.objects.filter(pk=sale.pk).update(is_active=False)
    elif spoil == "sale_later":
        FlashSale.objects.filter(pk=sale.pk).update(starts_at=now + timezone.timedelta(minutes=1))
    elif spoil == "sale_over":
        FlashSale.objects.filter(pk=sale.pk).update(ends_at=now)
    elif spoil == "sku_off":
        Sku.objects.filter(pk=sale.sku_id).update(is_active=False)
    elif spoil == "product_off":
        Product.objects.filter(skus__pk=sale.sku_id).update(is_active=False)
    elif spoil == "sku_short":
        Sku.objects.filter(pk=sale.sku_id).update(stock=0)
    elif spoil == "sale_short":
        FlashSale.objects.filter(pk=sale.pk).update(stock=0)
    elif spoil == "allowance":
        FlashSalePurchase.objects.create(sale=sale, customer=customer, quantity=2)
    elif spoil == "caps":
        settings.MAX_UNPAID_ORDERS = 1
        sku = make_sku(stock=5)
        assert django_create(_body(_confirm(customer, sku=sku)), headers)[0] == 201
    before = (
        Order.objects.count(),
        list(Sku.objects.order_by("pk").values_list("stock", flat=True)),
        list(FlashSalePurchase.objects.values_list("quantity", flat=True)),
    )
    [answer] = run(_real_stack(), [(_body(draft), headers)])
    assert (answer[0], json.loads(answer[2])["code"]) == (409, code), answer
    after = (
        Order.objects.count(),
        list(Sku.objects.order_by("pk").values_list("stock", flat=True)),
        list(FlashSalePurchase.objects.values_list("quantity", flat=True)),
    )
    assert before == after
    quota, held, res = _quota(sale)
    assert res == 0 and held.get(customer.pk, 0) == 0  # the reservation given back


def test_multi_sku_orders_in_both_listing_orders_gate_and_django_no_deadlock(make_customer, make_sku, caplog):

    freight.all_terms()
    a, b = make_sku(stock=7), make_sku(stock=100)
    requests = []
    for i in range(12):
        buyer = buyer_with_address(make_customer, i)
        items = [{"sku_id": a.pk, "quantity": 1}, {"sku_id": b.pk, "quantity": 2}]
        draft = order_confirm(customer=buyer, items=items if i % 2 else items[::-1])
        requests.append((_body(draft), _headers(buyer)))
    out = {}

    def node(n):
        out[n] = run(_real_stack(), requests[n::3])

    def django_thread():
        out[2] = [django_create(body, h) for body, h in requests[2::3]]
        from django.db import connection

        connection.close()

    _threads([lambda: node(0), lambda: node(1), django_thread])
    answers = out[0] + out[1] + out[2]
    assert sorted(a_[0] for a_ in answers) == [201] * 7 + [409] * 5
    assert (Sku.objects.get(pk=a.pk).stock, Sku.objects.get(pk=b.pk).stock) == (0, 100 - 14)
    assert Order.objects.count() == 7
    assert "deadlock" not in caplog.text.lower()
