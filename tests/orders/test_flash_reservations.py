"""A 秒杀 draft is a reservation on the sale's Redis quota (``apps.orders.flash_reservations``):
given back when its draft is never turned into an order, settled when it is, reconciled with
PostgreSQL by beat, and shared by several web nodes deciding at once."""

import datetime as dt
import json
import threading

import pytest
from django.conf import settings
from django.core.cache import cache
from django.utils import timezone
from django_redis import get_redis_connection

from apps.accounts import address_cards
from apps.accounts.models import Address
from apps.accounts.tokens import token_issue
from apps.marketing import flash_quota
from apps.marketing.models import FlashSale, FlashSalePurchase
from apps.orders import drafts, flash_reservations
from apps.orders.create import order_create
from apps.orders.exceptions import OrderKeyExpired
from apps.orders.models import Order
from apps.shipping import selectors as freight
from tests.orders.test_soldout_gate import Inner, call

pytestmark = pytest.mark.django_db


@pytest.fixture
def sale(make_flash_sale):
    sale = make_flash_sale(stock=5, sku_stock=50)
    freight.all_terms()
    return sale


@pytest.fixture
def buyers(make_customer):
    """``buyers(n)`` -> [(customer, token)], each with a default address and its card."""

    def make(n):
        out = []
        for _ in range(n):
            customer = make_customer()
            Address.objects.create(
                customer=customer,
                name="买家",
                phone="13800000000",
                province="浙江省",
                city="杭州市",
                detail="1号",
                is_default=True,
            )
            address_cards.card_refresh(customer.pk)
            out.append((customer, token_issue(customer_id=customer.pk)))
        return out

    return make


def confirm(gate, sale, token):
    body = json.dumps({"items": [{"sku_id": sale.sku_id, "quantity": 1}], "flash_sale_id": sale.pk}).encode()
    status, _, payload = call(
        gate,
        body=body,
        headers={"Host": "127.0.0.1:8000", "Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    return status, json.loads(payload)


def redis_state(sale):
    conn = get_redis_connection("default")
    quota = conn.get(flash_quota.key(sale.pk, "quota"))
    return (
        int(quota) if quota is not None else None,
        {int(k): int(v) for k, v in conn.hgetall(flash_quota.key(sale.pk, "held")).items()},
        sorted(k.decode() for k in conn.hkeys(flash_quota.key(sale.pk, "res"))),
    )


def test_a_draft_never_turned_into_an_order_gives_its_unit_back(sale, buyers):
    from starmall.gates.orders import OrderGate

    gate = OrderGate(Inner())
    ((customer, token),) = buyers(1)
    status, draft = confirm(gate, sale, token)
    assert status == 200
    assert redis_state(sale) == (4, {customer.pk: 1}, [draft["order_key"]])
    assert flash_reservations.reservations_expire() == 0  # not due yet
    later = timezone.now() + dt.timedelta(
        seconds=settings.ORDER_DRAFT_TTL_SECONDS + flash_quota.RESERVATION_GRACE_SECONDS + 1
    )
    assert flash_reservations.reservations_expire(now=later) == 1
    assert redis_state(sale) == (5, {}, [])
    assert drafts.draft_get(draft["order_key"]) is None  # the draft cannot make an order any more
    with pytest.raises(OrderKeyExpired):
        order_create(customer=customer, order_key=draft["order_key"])
    assert flash_reservations.reservations_expire(now=later) == 0  # once, whoever runs it (several machines)
    assert redis_state(sale) == (5, {}, [])
    assert confirm(gate, sale, token)[0] == 200  # the allowance is back too


def test_a_due_reservation_whose_order_exists_is_settled_not_given_back(sale, buyers):
    from starmall.gates.orders import OrderGate

    ((customer, token),) = buyers(1)
    _, draft = confirm(OrderGate(Inner()), sale, token)
    order_create(customer=customer, order_key=draft["order_key"])  # its on_commit settle never ran
    later = timezone.now() + dt.timedelta(
        seconds=settings.ORDER_DRAFT_TTL_SECONDS + flash_quota.RESERVATION_GRACE_SECONDS + 1
    )
    assert flash_reservations.reservations_expire(now=later) == 0
    assert redis_state(sale) == (4, {customer.pk: 1}, [])


def test_a_refused_create_gives_the_unit_back_at_once(sale, buyers):
    from starmall.gates.orders import OrderGate

    ((customer, token),) = buyers(1)
    _, draft = confirm(OrderGate(Inner()), sale, token)
    FlashSale.objects.filter(pk=sale.pk).update(ends_at=timezone.now() - dt.timedelta(seconds=1))
    with pytest.raises(Exception) as refused:
        order_create(customer=customer, order_key=draft["order_key"])
    assert refused.value.code == "invalid_state"
    assert redis_state(sale) == (5, {}, [])
    assert Order.objects.count() == 0


def test_reconciliation_corrects_the_quota_and_allowances_from_the_database(sale, buyers):
    from starmall.gates.orders import OrderGate

    gate = OrderGate(Inner())
    (a, token_a), (b, token_b), (c, _) = buyers(3)
    _, draft_a = confirm(gate, sale, token_a)
    order_create(customer=a, order_key=draft_a["order_key"])  # committed; settle did not run
    _, draft_b = confirm(gate, sale, token_b)  # a reservation without an order
    assert redis_state(sale) == (3, {a.pk: 1, b.pk: 1}, sorted([draft_a["order_key"], draft_b["order_key"]]))
    assert flash_reservations.quotas_reconcile() == {sale.pk: 0}  # a's order is not counted twice
    conn = get_redis_connection("default")
    conn.set(flash_quota.key(sale.pk, "quota"), 1)  # lost give-backs, a stray allowance
    conn.hset(flash_quota.key(sale.pk, "held"), c.pk, 1)
    conn.hdel(flash_quota.key(sale.pk, "held"), a.pk)
    assert flash_reservations.quotas_reconcile() == {sale.pk: 2}
    assert redis_state(sale)[:2] == (3, {a.pk: 1, b.pk: 1})  # stock 4 in the database - b's 1
    assert flash_reservations.quotas_reconcile() == {sale.pk: 0}  # twice: nothing more
    conn.set(cache.make_key("flash:reconcile:lock"), "1")  # another machine is reconciling
    conn.set(flash_quota.key(sale.pk, "quota"), 0)
    assert flash_reservations.quotas_reconcile() == {}
    conn.delete(cache.make_key("flash:reconcile:lock"))
    conn.delete(flash_quota.key(sale.pk, "quota"), flash_quota.key(sale.pk, "held"))  # Redis lost them
    # Loaded from the database (stock 4, a's purchase) minus the reservations left, a's among
    # them though its order committed: corrected at once by the same run.
    assert flash_reservations.quotas_reconcile() == {sale.pk: 1}
    assert redis_state(sale)[:2] == (3, {a.pk: 1, b.pk: 1})
    assert FlashSalePurchase.objects.get(sale=sale, customer=a).quantity == 1


def test_reconciliation_prepares_a_sale_before_it_starts(make_sku):
    now = timezone.now()
    soon = FlashSale.objects.create(
        title="即将开始",
        sku=make_sku(stock=9),
        price_fen=100,
        stock=7,
        starts_at=now + dt.timedelta(minutes=2),
        ends_at=now + dt.timedelta(hours=1),
    )
    later = FlashSale.objects.create(
        title="明天",
        sku=make_sku(stock=9),
        price_fen=100,
        stock=7,
        starts_at=now + dt.timedelta(days=1),
        ends_at=now + dt.timedelta(days=1, hours=1),
    )
    flash_reservations.quotas_reconcile()
    assert redis_state(soon)[0] == 7 and redis_state(later)[0] is None


def test_two_web_nodes_share_the_quota(sale, buyers, race, monkeypatch):
    """Two gates (two web processes' worth: each its own event loop and Redis pool) take
    buyers at the same moment: exactly the sale's 5 units are handed out, once each."""
    from starmall.gates import orders as order_gate
    from starmall.gates.orders import OrderGate

    monkeypatch.setattr(order_gate, "REDIS_TIMEOUT_SECONDS", 10)  # a loaded test machine is not a slow Redis

    nodes = [OrderGate(Inner()), OrderGate(Inner())]
    people = buyers(24)
    lock = threading.Lock()
    answers = []

    def buy(i):
        status, payload = confirm(nodes[i % 2], sale, people[i][1])
        with lock:
            answers.append((i % 2, status, payload.get("code")))
        return status

    results = race(buy, len(people))
    assert sorted(results) == [200] * 5 + [409] * 19, (results, answers)
    assert {code for _, status, code in answers if status == 409} == {"insufficient_stock"}
    assert all(node.app.bodies == [] for node in nodes)  # decided in Redis, never in Django
    quota, held, reserved = redis_state(sale)
    assert (quota, sum(held.values()), len(reserved)) == (0, 5, 5)
    winners = [people[i] for i, status in enumerate(results) if status == 200]
    keys = {k for k in reserved}
    for customer, _ in winners:
        key = next(k for k in keys if drafts.draft_get(k)["customer_id"] == customer.pk)
        assert order_create(customer=customer, order_key=key)[1]
    sale.refresh_from_db()
    assert (sale.stock, sale.sold, Order.objects.count()) == (0, 5, 5)
