"""A create answered before Django (``starmall.gates.creates``) by THE create, ``orders_create``.

Each order the gate makes is compared with the order Django's view makes from a draft of the
same shape: the answer (status, headers, body) and every column of the order, its lines and
its event, the allowance, the sale, the SKU and the Redis quota; a refusal is Django's answer
byte for byte, with nothing kept. The gate's create threads see only committed rows, hence
``transaction=True``. Runs on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json

import pytest
from django.forms.models import model_to_dict
from django.utils import timezone
from django_redis import get_redis_connection

from apps.accounts import address_cards
from apps.accounts.tokens import token_issue
from apps.catalog import soldout
from apps.catalog.models import Sku
from apps.marketing import flash_quota
from apps.marketing.models import FlashSale, FlashSalePurchase
from apps.orders import drafts, flash_reservations
from apps.orders.confirm import order_confirm
from apps.orders.models import Order, OrderEvent, OrderLine
from apps.shipping import selectors as freight
from starmall.gates.orders import OrderGate
from tests.orders.test_soldout_gate import IGNORED, Inner

pytestmark = pytest.mark.django_db(transaction=True)

CREATE = "/api/v1/orders"
FRESH_ORDER = {"id", "order_no", "order_key", "created_at", "pay_deadline"}


@pytest.fixture(autouse=True)
def _patient_redis(monkeypatch):
    from starmall.gates import orders as order_gate

    monkeypatch.setattr(order_gate, "REDIS_TIMEOUT_SECONDS", 10)  # a loaded test machine is not a slow Redis


@pytest.fixture(autouse=True)
def _no_gate_connection_left():
    """Every test closes the gate it made (``run``): a create thread's connection left open would
    hold the test database at its teardown (and in a worker, is a leak)."""
    yield
    import time

    from django.db import connection

    if connection.vendor != "postgresql":
        return
    for _ in range(40):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND application_name LIKE 'starmall-%%-gate'"
            )
            left = cursor.fetchone()[0]
        if not left:
            return
        time.sleep(0.05)
    pytest.fail(f"{left} gate connections left open")


def run(gate, requests: list[tuple[bytes, dict]], path: str = CREATE) -> list[tuple[int, dict, bytes]]:
    """Run ``requests`` ((body, headers) pairs) through ``gate`` at once in ONE event loop, as a
    worker does, then close the gate's pool and Redis client (when it has ``aclose``: the
    shop's whole application has none). Returns (status, headers, body)."""

    async def one(body: bytes, headers: dict):
        pairs = [*headers.items(), ("Content-Length", str(len(body)))]
        scope = {
            "type": "http",
            "http_version": "1.1",  # a2wsgi reads it when the request reaches Django
            "method": "POST",
            "path": path,
            "scheme": "http",
            "query_string": b"",
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in pairs],
        }
        messages = [{"type": "http.request", "body": body, "more_body": False}]
        sent = []

        async def receive():
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        async def send(message):
            sent.append(message)

        await gate(scope, receive, send)
        return (
            sent[0]["status"],
            {k.decode(): v.decode() for k, v in sent[0]["headers"]},
            b"".join(m.get("body", b"") for m in sent[1:]),
        )

    async def main():
        try:
            return await asyncio.gather(*(one(body, headers) for body, headers in requests))
        finally:
            if hasattr(gate, "aclose"):
                await gate.aclose()

    return asyncio.run(main())


def django_create(body: bytes, headers: dict) -> tuple[int, dict, bytes]:
    from django.test import Client

    response = Client(HTTP_HOST=headers["Host"]).generic(
        "POST", CREATE, body, content_type="application/json", HTTP_AUTHORIZATION=headers["Authorization"]
    )
    return response.status_code, {k.lower(): v for k, v in response.headers.items()}, response.content


def _headers(customer) -> dict:
    token = token_issue(customer_id=customer.pk)
    return {"Host": "127.0.0.1:8000", "Content-Type": "application/json", "Authorization": f"Bearer {token}"}


def _body(draft: dict, **extra) -> bytes:
    return json.dumps({"order_key": draft["order_key"], **extra}, ensure_ascii=False).encode()


@pytest.fixture
def sale(make_flash_sale):
    return make_flash_sale(stock=5, limit=2)


@pytest.fixture
def ready(customer, address):
    address_cards.card_refresh(customer.pk)
    freight.all_terms()
    return address


def buyer_with_address(make_customer, i: int):
    """A new customer with a default address (``i`` numbers it) and its address card in Redis,
    as a running shop has them when the buyer confirms."""
    from apps.accounts.models import Address

    buyer = make_customer()
    Address.objects.create(
        customer=buyer,
        name="买家",
        phone="13800000000",
        province="浙江省",
        city="杭州市",
        detail=f"{i}号",
        is_default=True,
    )
    address_cards.card_refresh(buyer.pk)
    return buyer


def _confirm(customer, sale=None, *, sku=None, units=1) -> dict:
    if sale is not None:
        return order_confirm(
            customer=customer, items=[{"sku_id": sale.sku_id, "quantity": units}], flash_sale_id=sale.pk
        )
    return order_confirm(customer=customer, items=[{"sku_id": sku.pk, "quantity": units}])


def _rows(order_no: str) -> dict:
    order = Order.objects.get(order_no=order_no)
    return {
        "order": {k: v for k, v in model_to_dict(order).items() if k not in FRESH_ORDER},
        "lines": [
            {k: v for k, v in model_to_dict(line).items() if k not in ("id", "order")}
            for line in OrderLine.objects.filter(order=order).order_by("id")
        ],
        "events": [
            {k: v for k, v in model_to_dict(e).items() if k not in ("id", "order", "created_at")}
            for e in OrderEvent.objects.filter(order=order)
        ],
        # exact on PostgreSQL (one statement writes ``now``); SQLite's ORM insert stamps created_at
        # with its own clock (auto_now_add), microseconds later
        "deadline_after": _deadline_after(order),
    }


def _deadline_after(order: Order) -> dt.timedelta:
    from django.db import connection

    after = order.pay_deadline - order.created_at
    return after if connection.vendor == "postgresql" else dt.timedelta(seconds=round(after.total_seconds()))


def _answer(answer) -> tuple[int, dict, dict]:
    status, headers, body = answer
    data = json.loads(body)
    for name in ("order_no", "created_at", "pay_deadline"):
        data.pop(name)
    for line in data["lines"]:
        line.pop("id")
    return status, {k: v for k, v in headers.items() if k not in IGNORED}, data


def _quota(sale) -> tuple[int, dict, int]:
    conn = get_redis_connection("default")
    held = {int(k): int(v) for k, v in conn.hgetall(flash_quota.key(sale.pk, "held")).items()}
    return int(conn.get(flash_quota.key(sale.pk, "quota"))), held, conn.hlen(flash_quota.key(sale.pk, "res"))


def test_a_winners_create_is_djangos_order_and_answer_field_by_field(customer, ready, sale):
    headers = _headers(customer)
    by_gate, by_django = _confirm(customer, sale), _confirm(customer, sale)
    assert _quota(sale) == (3, {customer.pk: 2}, 2)
    gate = OrderGate(Inner())

    [answer] = run(gate, [(_body(by_gate, remark="  周末送达 "), headers)])
    assert gate.app.bodies == []  # made before Django
    django = django_create(_body(by_django, remark="  周末送达 "), headers)

    assert answer[0] == 201
    assert _answer(answer) == _answer(django)
    mine, theirs = json.loads(answer[2]), json.loads(django[2])
    assert _rows(mine["order_no"]) == _rows(theirs["order_no"])
    order = Order.objects.get(order_no=mine["order_no"])
    assert (order.pay_fen, order.flash_sale_id, order.remark, order.status) == (
        by_gate["pay_fen"],
        sale.pk,
        "周末送达",
        "unpaid",
    )
    assert mine["pay_deadline"] == timezone.localtime(order.pay_deadline).isoformat()
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (3, 2)
    assert FlashSalePurchase.objects.get(sale=sale, customer=customer).quantity == 2
    assert Sku.objects.get(pk=sale.sku_id).stock == 18
    assert _quota(sale) == (3, {customer.pk: 2}, 0)  # both reservations settled, no unit given back
    assert drafts.draft_get(by_gate["order_key"]) is None and drafts.draft_get(by_django["order_key"]) is None


def test_a_plain_sku_create_takes_the_last_unit_and_flags_it(customer, ready, make_sku):
    sku = make_sku(stock=3)
    headers = _headers(customer)
    by_gate, by_django = _confirm(customer, sku=sku, units=2), _confirm(customer, sku=sku, units=1)
    gate = OrderGate(Inner())
    [answer] = run(gate, [(_body(by_gate), headers)])
    django = django_create(_body(by_django), headers)
    assert gate.app.bodies == [] and answer[0] == 201 and django[0] == 201
    assert _answer(answer)[2]["lines"][0]["quantity"] == 2
    assert Sku.objects.get(pk=sku.pk).stock == 0
    assert get_redis_connection("default").get(_flag(sku.pk)) == b"1"
    assert _rows(json.loads(answer[2])["order_no"])["events"] == _rows(json.loads(django[2])["order_no"])["events"]


def _flag(sku_id: int) -> str:
    from django.core.cache import cache

    return cache.make_key(soldout.sku_key(sku_id))


def test_a_sale_whose_database_stock_is_gone_is_refused_as_django_refuses_it(customer, ready, sale):
    headers = _headers(customer)
    by_gate, by_django = _confirm(customer, sale), _confirm(customer, sale)
    FlashSale.objects.filter(pk=sale.pk).update(stock=0)  # the quota says 3 left: too high, so only refusable
    gate = OrderGate(Inner())
    [answer] = run(gate, [(_body(by_gate), headers)])
    django = django_create(_body(by_django), headers)
    assert gate.app.bodies == [] and (answer[0], json.loads(answer[2])["code"]) == (409, "insufficient_stock")
    assert (answer[0], _plain(answer[1]), answer[2]) == (django[0], _plain(django[1]), django[2])
    assert Order.objects.count() == 0 and not FlashSalePurchase.objects.exists()
    assert Sku.objects.get(pk=sale.sku_id).stock == 20
    assert _quota(sale) == (5, {}, 0)  # both reservations given back


def _plain(headers: dict) -> dict:
    return {k: v for k, v in headers.items() if k not in IGNORED}


def test_the_caps_and_another_customers_key_are_answered_as_django_and_an_inactive_customer_reaches_it(
    customer, ready, sale, make_customer, settings
):
    headers = _headers(customer)
    settings.MAX_UNPAID_ORDERS = 1
    first, second = _confirm(customer, sale), _confirm(customer, sale)
    gate = OrderGate(Inner())
    assert run(gate, [(_body(first), headers)])[0][0] == 201
    status, _, body = run(gate, [(_body(second), headers)])[0]
    assert (status, json.loads(body)["code"]) == (409, "limit_exceeded")  # over the caps, nothing kept
    assert body == django_create(_body(second), headers)[2]
    assert Order.objects.count() == 1 and FlashSalePurchase.objects.get().quantity == 1

    settings.MAX_UNPAID_ORDERS = 3
    second = _confirm(customer, sale)
    other = _headers(make_customer())
    status, _, body = run(gate, [(_body(second), other)])[0]  # not the customer's draft
    assert (status, json.loads(body)["code"]) == (410, "order_key_expired")
    assert body == django_create(_body(second), other)[2]

    type(customer).objects.filter(pk=customer.pk).update(is_active=False)  # the token not yet revoked
    assert run(gate, [(_body(second), headers)])[0][2] == b"django"
    assert Order.objects.count() == 1 and FlashSale.objects.get(pk=sale.pk).stock == 4
    assert gate.app.bodies == [_body(second)]


@pytest.mark.parametrize(
    "body",
    [
        {"order_key": 12345},
        {"order_key": " KEY "},
        {"order_key": "KEY", "remark": "x" * 201},
        {"order_key": "KEY", "remark": None},
        {"order_key": "KEY", "remark": "a\x00b"},
        {"order_key": "KEY", "coupon_id": 1},
        {"order_key": ""},
        {},
    ],
)
def test_a_body_drf_would_read_otherwise_reaches_django(customer, ready, sale, body):
    draft = _confirm(customer, sale)
    raw = json.dumps({k: (draft["order_key"] if v == "KEY" else v) for k, v in body.items()}).encode()
    gate = OrderGate(Inner())
    assert run(gate, [(raw, _headers(customer))])[0][2] == b"django"
    assert gate.app.bodies == [raw] and Order.objects.count() == 0


def test_any_draft_is_created_by_the_one_create_and_a_replayed_key_reaches_django(customer, ready, make_sku, sale):
    """Points, coupons, slots: the gate hands every draft to ``orders_create``, the same rules as
    Django's; a replay (the draft gone, the order there) is Django's 200."""
    from apps.accounts.models import Customer

    headers = _headers(customer)
    sku = make_sku(stock=5)
    Customer.objects.filter(pk=customer.pk).update(points=300)
    customer.refresh_from_db()
    draft = order_confirm(customer=customer, items=[{"sku_id": sku.pk, "quantity": 1}], use_points=200)
    gate = OrderGate(Inner())
    status, _, body = run(gate, [(_body(draft), headers)])[0]
    assert status == 201 and json.loads(body)["points_fen"] == draft["points_fen"] > 0
    assert Customer.objects.get(pk=customer.pk).points == 100

    spent = order_confirm(customer=customer, items=[{"sku_id": sku.pk, "quantity": 1}], use_points=100)
    Customer.objects.filter(pk=customer.pk).update(points=0)  # spent elsewhere since confirm
    status, _, body = run(gate, [(_body(spent), headers)])[0]
    assert (status, json.loads(body)["code"]) == (409, "invalid_state")

    won = _confirm(customer, sale)
    assert run(gate, [(_body(won), headers)])[0][0] == 201
    assert run(gate, [(_body(won), headers)])[0][2] == b"django"  # the draft is gone: Django returns the order
    status, _, body = django_create(_body(won), headers)
    assert status == 200 and Order.objects.filter(order_key=won["order_key"]).count() == 1
    assert Sku.objects.get(pk=sku.pk).stock == 4


def test_the_same_key_twice_at_once_makes_one_order(customer, ready, sale):
    headers = _headers(customer)
    draft = _confirm(customer, sale)
    gate = OrderGate(Inner())
    answers = run(gate, [(_body(draft), headers)] * 4)
    assert sorted(a[0] for a in answers) == [200, 200, 200, 201]  # three passed to Django (Inner's 200)
    assert Order.objects.filter(order_key=draft["order_key"]).count() == 1
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (4, 1)


def test_a_quota_higher_than_the_stock_never_oversells(sale, make_customer, make_sku):
    """Ten winners in Redis for five units in the database, all creating at once through one
    worker: the conditional UPDATEs sell exactly five; the other five are refused, nothing kept."""
    freight.all_terms()
    flash_quota.quota_load(sale.pk, force=True)
    get_redis_connection("default").set(flash_quota.key(sale.pk, "quota"), 10)
    requests = []

    for i in range(10):
        buyer = buyer_with_address(make_customer, i)
        requests.append((_body(_confirm(buyer, sale)), _headers(buyer)))
    gate = OrderGate(Inner())
    answers = run(gate, requests)
    assert sorted(a[0] for a in answers) == [201] * 5 + [409] * 5
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (0, 5)
    assert Order.objects.filter(flash_sale=sale).count() == 5
    assert sum(FlashSalePurchase.objects.values_list("quantity", flat=True)) == 5
    assert Sku.objects.get(pk=sale.sku_id).stock == 15
    assert gate.app.bodies == []


def test_redis_failing_after_the_commit_keeps_the_order_and_beat_settles(customer, ready, sale, monkeypatch):
    headers = _headers(customer)
    draft = _confirm(customer, sale)

    def broken(*args, **kwargs):
        raise ConnectionError("Redis went away after the commit")

    monkeypatch.setattr(flash_quota, "script", broken)  # the after-commit pipeline's END (drafts_done)
    gate = OrderGate(Inner())
    [answer] = run(gate, [(_body(draft), headers)])
    assert answer[0] == 201 and gate.app.bodies == []  # the order is committed: its answer stands
    assert Order.objects.filter(order_key=draft["order_key"]).count() == 1
    assert _quota(sale) == (4, {customer.pk: 1}, 1)  # the reservation is still recorded
    monkeypatch.undo()
    # Beat's sweep settles it (its order exists): the unit is not given back.
    assert flash_reservations.reservations_expire(now=timezone.now() + dt.timedelta(days=1)) == 0
    assert _quota(sale) == (4, {customer.pk: 1}, 0)


def test_the_after_commit_work_reloads_its_script_after_a_redis_restart(customer, ready, sale):
    headers = _headers(customer)
    draft = _confirm(customer, sale)
    get_redis_connection("default").script_flush()
    gate = OrderGate(Inner())
    assert run(gate, [(_body(draft), headers)])[0][0] == 201
    assert _quota(sale) == (4, {customer.pk: 1}, 0)  # settled


def test_no_create_threads_means_django_creates(customer, ready, sale, settings):
    settings.CREATE_GATE_CONNECTIONS = 0
    draft = _confirm(customer, sale)
    gate = OrderGate(Inner())
    assert run(gate, [(_body(draft), _headers(customer))])[0][2] == b"django"
    assert Order.objects.count() == 0


def test_the_create_throttle_is_drfs_own_history(customer, ready, make_sku, monkeypatch):
    """A create the gate makes is counted in DRF's history for the view; over the rate, the
    gate hands the request to Django (whose 429 it is) and creates nothing."""
    from django.core.cache import cache

    from apps.orders.api.views import OrderCreateThrottle

    monkeypatch.setattr(OrderCreateThrottle, "THROTTLE_RATES", {"order_create": "2/min"})
    cache.delete(OrderCreateThrottle.cache_format % {"scope": "order_create", "ident": customer.pk})
    sku = make_sku(stock=5)
    headers = _headers(customer)
    keys = [_confirm(customer, sku=sku) for _ in range(3)]
    gate = OrderGate(Inner())
    answers = [run(gate, [(_body(k), headers)])[0] for k in keys]
    assert [a[0] for a in answers[:2]] == [201, 201] and answers[2][2] == b"django"
    assert Order.objects.count() == 2
    history = cache.get(OrderCreateThrottle.cache_format % {"scope": "order_create", "ident": customer.pk})
    assert len(history) == 2


def _history(customer) -> list:
    from django.core.cache import cache

    from apps.orders.api.views import OrderCreateThrottle

    return cache.get(OrderCreateThrottle.cache_format % {"scope": "order_create", "ident": customer.pk}) or []


def test_a_sold_out_create_is_refused_in_the_event_loop_as_django_refuses_it(customer, ready, make_sku, monkeypatch):
    """A draft priced before its SKU sold out: the gate answers ``orders_create``'s first rule
    from one MGET of the flags, with no order thread, and DRF's throttle counts it as Django's."""
    from starmall.gates import creates

    called = []
    real = creates.orders_create
    monkeypatch.setattr(creates, "orders_create", lambda requests: called.append(requests) or real(requests))
    sku = make_sku(stock=3)
    headers = _headers(customer)
    by_gate, by_django = _confirm(customer, sku=sku, units=2), _confirm(customer, sku=sku, units=2)
    Sku.objects.filter(pk=sku.pk).update(stock=0)
    soldout.mark(soldout.sku_key(sku.pk))
    gate = OrderGate(Inner())

    [answer] = run(gate, [(_body(by_gate), headers)])
    django = django_create(_body(by_django), headers)
    assert gate.app.bodies == [] and called == []
    assert (answer[0], _plain(answer[1]), answer[2]) == (django[0], _plain(django[1]), django[2])
    assert json.loads(answer[2])["detail"] == {"sku_id": sku.pk, "requested": 2, "available": 0}
    assert len(_history(customer)) == 2  # the gate's refusal counted, as Django's
    assert Order.objects.count() == 0 and drafts.draft_get(by_gate["order_key"]) is not None


def test_a_throttled_sold_out_create_reaches_django_uncounted(customer, ready, make_sku, monkeypatch):
    from django.core.cache import cache

    from apps.orders.api.views import OrderCreateThrottle

    monkeypatch.setattr(OrderCreateThrottle, "THROTTLE_RATES", {"order_create": "1/min"})
    sku = make_sku(stock=3)
    headers = _headers(customer)
    first, second = _confirm(customer, sku=sku), _confirm(customer, sku=sku)
    soldout.mark(soldout.sku_key(sku.pk))
    gate = OrderGate(Inner())
    assert json.loads(run(gate, [(_body(first), headers)])[0][2])["code"] == "insufficient_stock"
    assert run(OrderGate(Inner()), [(_body(second), headers)])[0][2] == b"django"  # Django's 429
    assert len(_history(customer)) == 1
    key = cache.make_key(OrderCreateThrottle.cache_format % {"scope": "order_create", "ident": customer.pk})
    assert 59_000 < get_redis_connection("default").pttl(key) <= 60_000  # DRF's duration, as django-redis sets it


def test_a_flash_sale_create_is_not_refused_by_the_sku_flag(customer, ready, sale):
    draft = _confirm(customer, sale)
    soldout.mark(soldout.sku_key(sale.sku_id))
    [answer] = run(OrderGate(Inner()), [(_body(draft), _headers(customer))])
    assert answer[0] == 201 and Sku.objects.get(pk=sale.sku_id).stock == 19


def test_two_web_nodes_decide_and_create_on_one_quota(sale, make_customer):
    """Two gates (two web processes: each its own event loop, Redis client and connection pool)
    take 16 buyers' confirms and then the winners' creates at the same moment: the quota hands
    out exactly the sale's 5 units and both nodes' creates sell exactly those."""
    import threading

    freight.all_terms()
    people = []
    for i in range(16):
        buyer = buyer_with_address(make_customer, i)
        people.append(_headers(buyer))
    confirm = json.dumps({"items": [{"sku_id": sale.sku_id, "quantity": 1}], "flash_sale_id": sale.pk}).encode()
    nodes = [OrderGate(Inner()), OrderGate(Inner())]
    answers: dict[int, list] = {}

    def node(n: int, requests: list, path: str) -> None:
        answers[n] = run(nodes[n], requests, path=path)

    def both(requests: list, path: str) -> list:
        threads = [threading.Thread(target=node, args=(n, requests[n::2], path)) for n in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return answers[0] + answers[1]

    confirmed = both([(confirm, h) for h in people], "/api/v1/orders/confirm")
    assert sorted(status for status, _, _ in confirmed) == [200] * 5 + [409] * 11
    winners = [
        (json.loads(body), headers)
        for (status, _, body), headers in zip(confirmed, people[0::2] + people[1::2])
        if status == 200
    ]
    created = both([(_body(draft), headers) for draft, headers in winners], CREATE)
    assert [status for status, _, _ in created] == [201] * 5
    assert all(n.app.bodies == [] for n in nodes)  # confirms and creates all answered before Django
    sale.refresh_from_db()
    assert (sale.stock, sale.sold, Order.objects.filter(flash_sale=sale).count()) == (0, 5, 5)
    assert Sku.objects.get(pk=sale.sku_id).stock == 15
    assert _quota(sale) == (0, {c: 1 for c in _quota(sale)[1]}, 0) and len(_quota(sale)[1]) == 5


def test_a_plain_confirm_is_order_confirm_called_by_the_gate(customer, ready, make_sku):
    """A confirm no Redis flag decides is priced by ``order_confirm`` on the order threads: the
    answer equals the view's (fresh key and expiry aside), the draft is stored; a refusal is
    Django's bytes; a body the view's serializer refuses reaches Django."""
    sku = make_sku(stock=3, price_fen=4200)
    headers = _headers(customer)
    gate = OrderGate(Inner())
    body = json.dumps({"items": [{"sku_id": sku.pk, "quantity": 2}]}).encode()
    [(status, answer_headers, payload)] = run(gate, [(body, headers)], path=CONFIRM)
    assert status == 200 and gate.app.bodies == []
    django = _django_confirm(body, headers)
    mine, theirs = json.loads(payload), json.loads(django[2])
    for fresh in ("order_key", "expires_at"):
        mine.pop(fresh), theirs.pop(fresh)
    assert mine == theirs and mine["goods_fen"] == 8400 and mine["address"]["id"] == ready.pk
    assert _plain(answer_headers) == _plain(django[1])
    assert drafts.draft_get(json.loads(payload)["order_key"])["pay_fen"] == mine["pay_fen"]

    too_many = json.dumps({"items": [{"sku_id": sku.pk, "quantity": 4}]}).encode()
    [(status, _, payload)] = run(OrderGate(Inner()), [(too_many, headers)], path=CONFIRM)
    assert (status, payload) == _django_confirm(too_many, headers)[::2]
    assert json.loads(payload)["code"] == "insufficient_stock"

    unknown = json.dumps({"items": [{"sku_id": sku.pk, "quantity": 1}], "address_id": 999999}).encode()
    [(status, _, payload)] = run(OrderGate(Inner()), [(unknown, headers)], path=CONFIRM)
    assert (status, payload) == _django_confirm(unknown, headers)[::2]
    assert Order.objects.count() == 0


CONFIRM = "/api/v1/orders/confirm"


def _django_confirm(body: bytes, headers: dict) -> tuple[int, dict, bytes]:
    from django.test import Client

    response = Client(HTTP_HOST=headers["Host"]).generic(
        "POST", CONFIRM, body, content_type="application/json", HTTP_AUTHORIZATION=headers["Authorization"]
    )
    return response.status_code, {k.lower(): v for k, v in response.headers.items()}, response.content
