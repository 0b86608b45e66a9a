"""A 秒杀 whose Redis restarts empty in the middle (a private redis-server, stopped and started
again on its port): the quota, the reservations, the drafts, the tokens, the address cards and
the scripts are gone. The sale resumes from PostgreSQL's stock and sells exactly its units,
its winners' confirms and creates answered by the gate before and after the restart."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.db.models import Count
from django.utils import timezone
from rest_framework.test import APIClient

from apps.accounts import address_cards
from apps.accounts.models import Address
from apps.accounts.tokens import token_issue
from apps.catalog.models import Sku
from apps.marketing import flash_quota
from apps.marketing.models import FlashSale, FlashSalePurchase
from apps.orders.models import Order
from apps.shipping import selectors as freight
from starmall.gates import orders as order_gate
from starmall.gates.orders import OrderGate

UNITS = 6


class Behind:
    """What the gate passes on: recorded, then answered by Django (the test client) as the real
    stack would answer it."""

    def __init__(self) -> None:
        self.passed = 0
        self.created_by_gate = 0

    async def __call__(self, scope, receive, send):
        self.passed += 1
        await receive()
        await send({"type": "http.response.start", "status": 599, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def _confirm(gate, behind, sale, token) -> tuple[int, dict]:
    from tests.orders.test_soldout_gate import call

    body = {"items": [{"sku_id": sale.sku_id, "quantity": 1}], "flash_sale_id": sale.pk}
    status, _, payload = call(
        gate,
        body=json.dumps(body).encode(),
        headers={"Host": "127.0.0.1:8000", "Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    if status == 599:  # passed to Django
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        response = api.post("/api/v1/orders/confirm", body, format="json")
        return response.status_code, response.json()
    return status, json.loads(payload)


def _buy(gate, behind, sale, token) -> str:
    status, draft = _confirm(gate, behind, sale, token)
    if status != 200:
        return f"confirm {status} {draft['code']}"
    from tests.orders.test_create_gate import run

    body = json.dumps({"order_key": draft["order_key"]}).encode()
    headers = {"Host": "127.0.0.1:8000", "Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    [(status, _, payload)] = run(gate, [(body, headers)])  # the winner's create, answered by the gate
    if status == 599:  # passed to Django
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        created = api.post("/api/v1/orders", {"order_key": draft["order_key"]}, format="json")
        status, payload = created.status_code, created.content
    else:
        behind.created_by_gate += 1
    return "won" if status == 201 else f"create {status} {json.loads(payload)['code']}"


@pytest.mark.django_db(transaction=True)
def test_redis_restarted_empty_mid_sale_resumes_and_sells_exactly_the_stock(
    shop_redis, make_customer, make_sku, monkeypatch
):
    monkeypatch.setattr(order_gate, "REDIS_TIMEOUT_SECONDS", 10)  # a loaded test machine is not a slow Redis
    now = timezone.now()
    sale = FlashSale.objects.create(
        title="限时秒杀",
        sku=make_sku(stock=10),
        price_fen=9900,
        stock=UNITS,
        limit_per_customer=1,
        starts_at=now - dt.timedelta(minutes=1),
        ends_at=now + dt.timedelta(hours=1),
    )
    flash_quota.card_write(sale)
    flash_quota.quota_load(sale.pk)
    freight.all_terms()
    people = []
    for _ in range(14):
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
        people.append(customer)
    tokens = [token_issue(customer_id=c.pk) for c in people]
    behind = Behind()
    gate = OrderGate(behind)

    by_gate = 3  # the gate creates on any database (orders_create on its create threads)
    assert [_buy(gate, behind, sale, t) for t in tokens[:3]] == ["won"] * 3
    assert (behind.passed, behind.created_by_gate) == (3 - by_gate, by_gate)  # decided in Redis
    reserved = [_confirm(gate, behind, sale, t) for t in tokens[3:5]]  # two drafts, not yet created
    assert [status for status, _ in reserved] == [200, 200]
    assert int(shop_redis.client().get(flash_quota.key(sale.pk, "quota"))) == 1

    shop_redis.stop()
    shop_redis.start()  # same port, empty: quota, reservations, drafts, tokens, cards, scripts gone
    assert shop_redis.client().dbsize() == 0
    tokens = [token_issue(customer_id=c.pk) for c in people]  # the customers log in again
    for (_, draft), token in zip(reserved, tokens[3:5], strict=True):  # their drafts went with Redis
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        assert api.post("/api/v1/orders", {"order_key": draft["order_key"]}, format="json").status_code == 410

    outcomes = [_buy(gate, behind, sale, t) for t in tokens]
    assert behind.created_by_gate >= 4  # the gate creates again once Django loaded the quota
    assert behind.passed >= 1  # the first confirms after the restart went to Django, which loaded the quota
    assert outcomes[:3] == ["confirm 409 limit_exceeded"] * 3  # their purchases, loaded from PostgreSQL
    assert outcomes.count("won") == UNITS - 3, outcomes
    assert set(outcomes[3:]) == {"won", "confirm 409 insufficient_stock"}, outcomes

    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (0, UNITS)
    assert Sku.objects.get(pk=sale.sku_id).stock == 10 - UNITS
    assert Order.objects.filter(flash_sale=sale).count() == UNITS
    assert not Order.objects.values("customer").annotate(n=Count("id")).filter(n__gt=1).exists()
    assert sum(FlashSalePurchase.objects.filter(sale=sale).values_list("quantity", flat=True)) == UNITS
    assert int(shop_redis.client().get(flash_quota.key(sale.pk, "quota"))) == 0
