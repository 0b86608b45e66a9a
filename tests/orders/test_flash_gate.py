"""A 秒杀 confirm decided in Redis by the gate in front of Django (``starmall.gates.flash_confirm``).

Every answer the gate gives is compared with the answer Django gives to the same request:
status, headers and body (a winner's ``order_key`` and ``expires_at`` are fresh each time);
the gate's draft must be one ``order_create`` turns into the order. What it may not answer
must reach Django with its body intact.
"""

import functools
import json

import pytest
from django.utils import timezone
from django_redis import get_redis_connection
from redis.exceptions import ResponseError

from apps.accounts import address_cards
from apps.marketing import flash_quota
from apps.marketing.models import FlashSale, FlashSalePurchase
from apps.orders.confirm import MAX_ORDER_FEN
from apps.orders.create import order_create
from apps.orders.models import Order
from apps.shipping import selectors as freight
from starmall.gates import flash_confirm
from tests.orders.test_soldout_gate import IGNORED, call, django_answer

pytestmark = pytest.mark.django_db

FRESH = ("order_key", "expires_at")


@pytest.fixture
def make_sale(make_flash_sale):
    """``make_flash_sale`` with the limit these tests start from: 2 per customer."""
    return functools.partial(make_flash_sale, limit=2, starts_in=-10)


@pytest.fixture
def ready(customer, address):
    """The customer's address card and the freight terms in Redis, as in a running shop."""
    address_cards.card_refresh(customer.pk)
    freight.all_terms()
    return address


@pytest.fixture
def gate():
    from starmall.gates.orders import OrderGate
    from tests.orders.test_soldout_gate import Inner

    inner = Inner()
    return OrderGate(inner), inner


def _body(sale, units=1, **extra) -> bytes:
    return json.dumps(
        {"items": [{"sku_id": sale.sku_id, "quantity": units}], "flash_sale_id": sale.pk, **extra}
    ).encode()


def _headers(api_token):
    return {"Host": "127.0.0.1:8000", "Content-Type": "application/json", "Authorization": f"Bearer {api_token}"}


@pytest.fixture
def headers(customer):
    from apps.accounts.tokens import token_issue

    return _headers(token_issue(customer_id=customer.pk))


def _quota(sale):
    conn = get_redis_connection("default")
    return int(conn.get(flash_quota.key(sale.pk, "quota"))), {
        int(k): int(v) for k, v in conn.hgetall(flash_quota.key(sale.pk, "held")).items()
    }


def _same(gate_answer, django, fresh=()):
    status, head, body = gate_answer
    d_status, d_head, d_body = django
    assert status == d_status
    if fresh:
        mine, theirs = json.loads(body), json.loads(d_body)
        for name in fresh:
            assert mine.pop(name) != theirs.pop(name) or name == "expires_at"
        assert mine == theirs
        assert len(body) == len(d_body)
    else:
        assert body == d_body
    assert {k: v for k, v in head.items() if k not in IGNORED} == {k: v for k, v in d_head.items() if k not in IGNORED}


def test_a_winner_gets_djangos_draft_from_redis_and_creates_the_order(
    gate, headers, make_sale, ready, customer, django_capture_on_commit_callbacks
):
    app, inner = gate
    sale = make_sale(stock=5, limit=2)
    body = _body(sale, address_id=ready.pk)
    answer = call(app, body=body, headers=headers)
    assert inner.bodies == []  # decided in Redis
    assert answer[0] == 200
    draft = json.loads(answer[2])
    assert (draft["flash_sale_id"], draft["goods_fen"], draft["pay_fen"], draft["usable_coupons"]) == (
        sale.pk,
        9900,
        9900 + draft["freight_fen"],
        [],
    )
    assert draft["address"] == {"id": ready.pk, **ready.snapshot()}
    assert draft["lines"] == [
        {
            "sku_id": sale.sku_id,
            "name": "青瓷盖碗",
            "specs": {"颜色": "天青"},
            "price_fen": 9900,
            "quantity": 1,
            "amount_fen": 9900,
        }
    ]
    assert _quota(sale) == (4, {customer.pk: 1})
    _same(answer, django_answer(body, headers), fresh=FRESH)  # Django's own draft: the second unit
    assert _quota(sale) == (3, {customer.pk: 2})
    assert FlashSale.objects.get(pk=sale.pk).stock == 5  # the database is untouched until create

    with django_capture_on_commit_callbacks(execute=True):
        order, created = order_create(customer=customer, order_key=draft["order_key"])
    assert created and (order.pay_fen, order.flash_sale_id, order.address) == (
        draft["pay_fen"],
        sale.pk,
        draft["address"],
    )
    sale.refresh_from_db()
    assert (sale.stock, sale.sold) == (4, 1)
    assert FlashSalePurchase.objects.get(sale=sale, customer=customer).quantity == 1
    assert _quota(sale) == (3, {customer.pk: 2})  # settled: the order holds the unit now
    assert get_redis_connection("default").hlen(flash_quota.key(sale.pk, "res")) == 1  # Django's draft


def test_sold_out_in_redis_is_djangos_answer_from_one_round_trip(gate, headers, make_sale, ready, make_customer):
    app, inner = gate
    sale = make_sale(stock=1)
    other = make_customer()
    address_cards.card_refresh(other.pk)
    from apps.accounts.models import Address
    from apps.accounts.tokens import token_issue

    Address.objects.create(
        customer=other,
        name="李四",
        phone="13900000000",
        province="浙江省",
        city="杭州市",
        detail="1号",
        is_default=True,
    )
    address_cards.card_refresh(other.pk)
    assert call(app, body=_body(sale), headers=_headers(token_issue(customer_id=other.pk)))[0] == 200
    body = _body(sale)
    answer = call(app, body=body, headers=headers)
    assert inner.bodies == []
    assert answer[0] == 409
    assert json.loads(answer[2]) == {
        "code": "insufficient_stock",
        "message": "秒杀商品已抢完。",
        "detail": {"flash_sale_id": sale.pk, "sku_id": sale.sku_id, "requested": 1, "available": 0},
    }
    _same(answer, django_answer(body, headers))
    assert Order.objects.count() == 0


def test_over_the_limit_is_djangos_answer(gate, headers, make_sale, ready):
    app, inner = gate
    sale = make_sale(stock=5, limit=1)
    assert call(app, body=_body(sale), headers=headers)[0] == 200
    answer = call(app, body=_body(sale), headers=headers)
    assert inner.bodies == []
    assert json.loads(answer[2]) == {
        "code": "limit_exceeded",
        "message": "已超过本场秒杀的限购数量。",
        "detail": {"flash_sale_id": sale.pk, "limit_per_customer": 1, "held": 1, "requested": 1},
    }
    _same(answer, django_answer(_body(sale), headers))


def test_a_sale_not_live_is_djangos_answer(gate, headers, make_sale, ready):
    app, inner = gate
    sale = make_sale(starts_in=30)
    answer = call(app, body=_body(sale), headers=headers)
    assert inner.bodies == []
    assert answer[0] == 409 and json.loads(answer[2])["code"] == "invalid_state"
    _same(answer, django_answer(_body(sale), headers))


@pytest.mark.parametrize(
    "what",
    [
        "no_card",
        "no_quota",
        "no_address_card",
        "other_address",
        "coupon",
        "points",
        "other_sku",
        "unknown_token",
        "script_error",
    ],
)
def test_what_the_gate_cannot_decide_reaches_django_intact(
    gate, headers, make_sale, ready, customer, make_sku, what, monkeypatch
):
    app, inner = gate
    sale = make_sale()
    conn = get_redis_connection("default")
    body = _body(sale)
    if what == "no_card":
        conn.delete(flash_quota.key(sale.pk, "card"))
    elif what == "no_quota":
        conn.delete(flash_quota.key(sale.pk, "quota"))
    elif what == "no_address_card":
        conn.delete(address_cards.card_key(customer.pk))
    elif what == "other_address":
        body = _body(sale, address_id=ready.pk + 1000)
    elif what == "coupon":
        body = _body(sale, coupon_id=3)
    elif what == "points":
        body = _body(sale, use_points=10)
    elif what == "other_sku":
        body = json.dumps({"items": [{"sku_id": make_sku().pk, "quantity": 1}], "flash_sale_id": sale.pk}).encode()
    elif what == "unknown_token":
        headers = {**headers, "Authorization": "Bearer nobody"}
    elif what == "script_error":

        async def broken(self, *args, **kwargs):
            raise ResponseError("ERR Error running script: oom")

        monkeypatch.setattr("redis.asyncio.Redis.evalsha", broken)
    answer = call(app, body=body, headers=headers)
    assert answer == (200, {}, b"django")
    assert inner.bodies == [body]
    if what != "no_quota":
        assert _quota(sale) == (5, {})  # nothing taken


def test_a_restarted_redis_without_the_scripts_loads_them_and_judges_by_flags(gate, headers, make_sale, ready):
    app, inner = gate
    sale = make_sale()
    get_redis_connection("default").script_flush()  # what a restart leaves
    assert call(app, body=_body(sale), headers=headers) == (200, {}, b"django")  # no flag: Django answers
    assert call(app, body=_body(sale), headers=headers)[0] == 200  # the scripts are back: the gate decides
    assert inner.bodies == [_body(sale)]
    assert _quota(sale)[0] == 4


def test_the_gate_and_services_agree_on_the_largest_order():
    assert flash_confirm.MAX_ORDER_FEN == MAX_ORDER_FEN


def test_a_confirm_django_answered_leaves_the_address_card_for_the_gate(gate, headers, make_sale, ready, customer):
    app, inner = gate
    sale = make_sale(stock=5, limit=2)
    get_redis_connection("default").delete(address_cards.card_key(customer.pk))  # expired, or never written
    assert call(app, body=_body(sale), headers=headers) == (200, {}, b"django")
    assert django_answer(_body(sale), headers)[0] == 200  # Django answers it and offers the card
    assert address_cards.card_read(get_redis_connection("default").get(address_cards.card_key(customer.pk))) == {
        "id": ready.pk,
        **ready.snapshot(),
    }
    assert call(app, body=_body(sale), headers=headers)[0] == 200  # now decided in front of Django
    assert len(inner.bodies) == 1
    assert _quota(sale) == (3, {customer.pk: 2})


def test_an_svip_winner_ships_free_in_the_gate_as_in_django(
    gate, headers, make_sale, ready, customer, django_capture_on_commit_callbacks
):
    """The SVIP expiry rides on the address card: the gate's draft has no freight, equal to
    Django's; a purchase that makes the customer SVIP refreshes the card after its commit."""
    from apps.members import services as members
    from apps.members.models import MemberCard

    app, inner = gate
    sale = make_sale(stock=5, limit=3, price_fen=5000)
    plain = call(app, body=_body(sale), headers=headers)
    assert (plain[0], json.loads(plain[2])["freight_fen"]) == (200, 1000)
    card = MemberCard.objects.create(name="月卡", days=30, pay_fen=1990)
    purchase = members.card_purchase_create(customer=customer, card_id=card.pk, api="v2")
    with django_capture_on_commit_callbacks(execute=True):
        assert members.card_purchase_apply_paid(purchase=purchase, transaction_id="4200000009", paid_at=timezone.now())
    assert address_cards.card_extras(get_redis_connection("default").get(address_cards.card_key(customer.pk))) == {
        "member": {"svip_until_ms": int(purchase.customer.membership.svip_expires_at.timestamp() * 1000)}
    }
    answer = call(app, body=_body(sale), headers=headers)
    assert inner.bodies == []  # decided in Redis
    draft = json.loads(answer[2])
    assert (answer[0], draft["goods_fen"], draft["freight_fen"], draft["pay_fen"]) == (200, 5000, 0, 5000)
    _same(answer, django_answer(_body(sale), headers), fresh=FRESH)  # Django: the same free freight


def test_an_address_card_without_the_member_terms_goes_to_django(gate, headers, make_sale, ready, customer):
    app, inner = gate
    sale = make_sale(stock=5, limit=2)
    conn = get_redis_connection("default")
    conn.set(address_cards.card_key(customer.pk), json.dumps({"id": ready.pk, **ready.snapshot()}))  # an older card
    assert call(app, body=_body(sale), headers=headers) == (200, {}, b"django")
    assert len(inner.bodies) == 1
