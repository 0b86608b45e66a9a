"""The sold-out gate in front of Django (``starmall.gates.orders``).

It may answer a confirm only with the answer Django itself would give: these tests send the
same request to the gate and, through Django's test client, to the whole Django stack, and
compare status, headers and body byte for byte. Everything the gate does not answer must
reach Django with its body intact.
"""

import asyncio
import json

import pytest
from django.db import transaction

from apps.accounts.models import Customer
from apps.accounts.tokens import token_customer_id, token_issue
from apps.catalog import soldout
from apps.orders.models import Order
from starmall.gates.orders import MAX_BODY, OrderGate, confirm_request

pytestmark = pytest.mark.django_db

PATH = "/api/v1/orders/confirm"
IGNORED = {"date", "server", "content-length"}  # set by the server, not by Django or the gate


class Inner:
    """The application behind the gate: records what reached it and answers 200 ``django``."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope, receive, send):
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"django"})


def call(
    app,
    *,
    body: bytes,
    headers: dict[str, str] | list[tuple[str, str]],
    method="POST",
    path=PATH,
    chunks=1,
    scheme="http",
    content_length=True,
    query_string=b"",
):
    """Run one request through an ASGI ``app``: (status, {header: value}, body). ``headers``: a
    dict, or a list of (name, value) pairs when a name repeats. The server's ``Content-Length``
    is added unless ``content_length`` is False (a chunked request) or one is given."""
    pairs = list(headers.items() if isinstance(headers, dict) else headers)
    if content_length and not any(k.lower() == "content-length" for k, _ in pairs):
        pairs.append(("Content-Length", str(len(body))))
    size = max(1, -(-len(body) // chunks))
    parts = [body[i : i + size] for i in range(0, len(body), size)] or [b""]
    messages = [{"type": "http.request", "body": p, "more_body": i < len(parts) - 1} for i, p in enumerate(parts)]
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "scheme": scheme,
        "query_string": query_string,
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in pairs],
    }
    sent = []

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = sent[0]
    return (
        start["status"],
        {k.decode(): v.decode() for k, v in start["headers"]},
        b"".join(m.get("body", b"") for m in sent[1:]),
    )


def django_answer(body: bytes, headers: dict[str, str], secure=False, path=PATH):
    """The same request through Django's whole stack (middleware, DRF, the view), to ``path``."""
    from django.test import Client

    meta = {
        "HTTP_" + k.upper().replace("-", "_"): v
        for k, v in headers.items()
        if k.lower() not in ("content-type", "host")
    }
    response = Client(HTTP_HOST=headers.get("Host", "testserver")).generic(
        "POST", path, body, content_type=headers.get("Content-Type", ""), secure=secure, **meta
    )
    return (response.status_code, {k.lower(): v for k, v in response.headers.items()}, response.content)


@pytest.fixture
def token(customer):
    return token_issue(customer_id=customer.pk)


@pytest.fixture
def headers(token):
    return {"Host": "127.0.0.1:8000", "Content-Type": "application/json", "Authorization": f"Bearer {token}"}


@pytest.fixture
def gate():
    inner = Inner()
    return OrderGate(inner), inner


def _body(**data) -> bytes:
    return json.dumps(data).encode()


def _same(gate_answer, django):
    status, head, body = gate_answer
    d_status, d_head, d_body = django
    assert (status, body) == (d_status, d_body)
    assert {k: v for k, v in head.items() if k not in IGNORED} == {k: v for k, v in d_head.items() if k not in IGNORED}


@pytest.mark.parametrize("shape", ["plain", "address", "points", "twice", "second_of_two", "points_true"])
def test_a_sold_out_confirm_gets_djangos_answer_byte_for_byte(gate, headers, make_sku, address, shape):
    app, inner = gate
    sold, other = make_sku(stock=0), make_sku(stock=5)
    soldout.mark(soldout.sku_key(sold.pk))
    body = {
        "plain": _body(items=[{"sku_id": sold.pk, "quantity": 1}]),
        "address": _body(items=[{"sku_id": sold.pk, "quantity": 2}], address_id=address.pk),
        "points": _body(items=[{"sku_id": sold.pk, "quantity": 1}], use_points=30, coupon_id=None),
        "points_true": _body(items=[{"sku_id": sold.pk, "quantity": 1}], use_points=True),
        "twice": _body(items=[{"sku_id": sold.pk, "quantity": 1}, {"sku_id": sold.pk, "quantity": 2}]),
        "second_of_two": _body(items=[{"sku_id": other.pk, "quantity": 1}, {"sku_id": sold.pk, "quantity": 1}]),
    }[shape]
    answer = call(app, body=body, headers=headers)
    assert inner.bodies == []  # Django was not asked
    assert answer[0] == 409
    assert json.loads(answer[2])["code"] == "insufficient_stock"
    assert json.loads(answer[2])["detail"]["sku_id"] == sold.pk
    if shape == "twice":
        assert json.loads(answer[2])["detail"]["requested"] == 3
    _same(answer, django_answer(body, headers))
    assert Order.objects.count() == 0


def test_a_sold_out_flash_sale_gets_djangos_answer(gate, headers, make_sku):
    app, inner = gate
    sku = make_sku(stock=50)
    soldout.mark(soldout.flash_sale_key(7), value=sku.pk)
    body = _body(items=[{"sku_id": sku.pk, "quantity": 2}], flash_sale_id=7)
    answer = call(app, body=body, headers=headers)
    assert inner.bodies == []
    assert json.loads(answer[2]) == {
        "code": "insufficient_stock",
        "message": "秒杀商品已抢完。",
        "detail": {"flash_sale_id": 7, "sku_id": sku.pk, "requested": 2, "available": 0},
    }
    _same(answer, django_answer(body, headers))


def test_a_flash_sale_flag_answers_only_for_the_sales_own_sku(gate, headers, make_sku):
    app, inner = gate
    sku, other = make_sku(stock=50), make_sku(stock=50)
    soldout.mark(soldout.flash_sale_key(7), value=sku.pk)
    for items in (
        [{"sku_id": other.pk, "quantity": 1}],
        [{"sku_id": sku.pk, "quantity": 1}, {"sku_id": other.pk, "quantity": 1}],
    ):
        body = _body(items=items, flash_sale_id=7)
        assert call(app, body=body, headers=headers) == (200, {}, b"django")
        assert django_answer(body, headers)[0] == 404  # no sale 7 in the database: its answer, not "sold out"
    assert len(inner.bodies) == 2


def test_a_real_sale_sold_out_answers_the_same_from_the_database_the_flag_and_the_gate(
    gate, headers, customer, address, make_sku
):
    import datetime as dt

    from django.core.cache import cache
    from django.utils import timezone

    from apps.marketing.models import FlashSale

    app, inner = gate
    sku = make_sku(stock=20)
    now = timezone.now()
    sale = FlashSale.objects.create(
        title="秒杀",
        sku=sku,
        price_fen=990,
        stock=0,
        limit_per_customer=2,
        starts_at=now - dt.timedelta(minutes=5),
        ends_at=now + dt.timedelta(hours=1),
    )
    body = _body(items=[{"sku_id": sku.pk, "quantity": 1}], flash_sale_id=sale.pk, address_id=address.pk)
    from_database = django_answer(body, headers)  # reads quota 0 and sets the flag
    assert from_database[0] == 409
    assert cache.get(soldout.flash_sale_key(sale.pk)) == sku.pk
    from_flag = django_answer(body, headers)
    from_gate = call(app, body=body, headers=headers)
    assert inner.bodies == []
    assert from_database[2] == from_flag[2] == from_gate[2]
    assert json.loads(from_gate[2])["detail"] == {
        "flash_sale_id": sale.pk,
        "sku_id": sku.pk,
        "requested": 1,
        "available": 0,
    }


def test_behind_https_proxy_with_redirect_and_hsts_it_still_matches_django(gate, headers, make_sku, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 3600
    settings.SECURE_HSTS_PRELOAD = True
    app, inner = gate
    sku = make_sku(stock=0)
    soldout.mark(soldout.sku_key(sku.pk))
    body = _body(items=[{"sku_id": sku.pk, "quantity": 1}])
    plain = call(app, body=body, headers=headers)
    assert plain == (200, {}, b"django")  # Django redirects plain http: the gate leaves it to Django
    forwarded = {**headers, "X-Forwarded-Proto": "https"}
    answer = call(app, body=body, headers=forwarded)
    assert answer[0] == 409 and "strict-transport-security" in answer[1]
    _same(answer, django_answer(body, forwarded))
    assert len(inner.bodies) == 1


@pytest.mark.parametrize(
    "case",
    [
        "not_flagged",
        "unknown_token",
        "no_token",
        "basic_auth",
        "host_not_allowed",
        "no_content_type",
        "form_body",
        "accept_html",
        "accept_params",
        "sku_as_string",
        "quantity_too_big",
        "cart_item_ids",
        "slot_id",
        "unknown_field",
        "nan",
        "not_json",
        "not_utf8",
        "too_many_lines",
        "bool_sku",
        "list_body",
        "get",
        "other_path",
        "chunked_big",
        "twice_authorization",
        "latin1_charset",
    ],
)
def test_anything_else_reaches_django_with_its_body_intact(gate, headers, make_sku, case):
    app, inner = gate
    sku = make_sku(stock=0)
    soldout.mark(soldout.sku_key(sku.pk))
    item = {"sku_id": sku.pk, "quantity": 1}
    body, head, kwargs = _body(items=[item]), dict(headers), {}
    if case == "not_flagged":
        body = _body(items=[{"sku_id": make_sku(stock=3).pk, "quantity": 1}])
    elif case == "unknown_token":
        head["Authorization"] = "Bearer not-a-token"
    elif case == "no_token":
        del head["Authorization"]
    elif case == "basic_auth":
        head["Authorization"] = "Basic dXNlcjpwYXNz"
    elif case == "host_not_allowed":
        head["Host"] = "evil.example.com"
    elif case == "no_content_type":
        del head["Content-Type"]
    elif case == "form_body":
        head["Content-Type"] = "application/x-www-form-urlencoded"
    elif case == "accept_html":
        head["Accept"] = "text/html"
    elif case == "accept_params":
        head["Accept"] = "application/json; indent=4"
    elif case == "sku_as_string":
        body = _body(items=[{"sku_id": str(sku.pk), "quantity": 1}])
    elif case == "quantity_too_big":
        body = _body(items=[{"sku_id": sku.pk, "quantity": 1000}])
    elif case == "cart_item_ids":
        body = _body(items=[item], cart_item_ids=[1])
    elif case == "slot_id":
        body = _body(items=[item], slot_id=3)
    elif case == "unknown_field":
        body = _body(items=[item], note="快点")
    elif case == "nan":
        body = b'{"items": [{"sku_id": %d, "quantity": 1}], "use_points": NaN}' % sku.pk
    elif case == "not_json":
        body = b"{items"
    elif case == "not_utf8":
        body = b'{"items": [{"sku_id": %d, "quantity": 1}], "x": "\xff"}' % sku.pk
    elif case == "too_many_lines":
        body = _body(items=[item] * 51)
    elif case == "bool_sku":
        body = _body(items=[{"sku_id": True, "quantity": 1}])
    elif case == "list_body":
        body = _body(items=[item])[:-1] + b', "items2": []}'
        body = b"[" + body + b"]"
    elif case == "get":
        kwargs["method"] = "GET"
    elif case == "other_path":
        kwargs["path"] = "/api/v1/orders"
    elif case == "chunked_big":
        body = _body(items=[item], address_id=None) + b" " * MAX_BODY
        kwargs["chunks"] = 7
    elif case == "twice_authorization":
        pass  # built below: a header list with two Authorization lines
    elif case == "latin1_charset":
        head["Content-Type"] = "application/json; charset=latin-1"
    if case == "twice_authorization":
        answer = call(app, body=body, headers=[*head.items(), ("Authorization", "Bearer x")])
    else:
        answer = call(app, body=body, headers=head, **kwargs)
    assert answer == (200, {}, b"django")
    assert inner.bodies == [body]


def test_a_body_over_the_apis_limit_is_left_to_djangos_413(gate, headers, make_sku, settings):
    app, inner = gate
    sku = make_sku(stock=0)
    soldout.mark(soldout.sku_key(sku.pk))
    body = _body(items=[{"sku_id": sku.pk, "quantity": 1}])
    settings.API_MAX_BODY_BYTES = len(body) - 1
    assert call(app, body=body, headers=headers) == (200, {}, b"django")
    assert call(app, body=body, headers={**headers, "Content-Length": str(len(body))}) == (200, {}, b"django")
    assert django_answer(body, headers)[0] == 413
    settings.API_MAX_BODY_BYTES = len(body)
    assert call(app, body=body, headers={**headers, "Content-Length": str(len(body))})[0] == 409
    assert call(app, body=body, headers={**headers, "Content-Length": "12abc"}) == (200, {}, b"django")
    assert inner.bodies == [body] * 3


def test_redis_unreachable_means_django_answers(gate, headers, make_sku, settings):
    app, inner = gate
    sku = make_sku(stock=0)
    soldout.mark(soldout.sku_key(sku.pk))
    settings.CACHES = {
        **settings.CACHES,
        "default": {**settings.CACHES["default"], "LOCATION": "redis://127.0.0.1:9/0"},
    }
    body = _body(items=[{"sku_id": sku.pk, "quantity": 1}])
    assert call(app, body=body, headers=headers) == (200, {}, b"django")
    assert inner.bodies == [body]


def test_a_deactivated_customers_tokens_are_revoked_so_the_gate_sends_them_to_django(
    gate, headers, token, customer, make_sku, django_capture_on_commit_callbacks
):
    app, inner = gate
    other_token = token_issue(customer_id=customer.pk)
    sku = make_sku(stock=0)
    soldout.mark(soldout.sku_key(sku.pk))
    body = _body(items=[{"sku_id": sku.pk, "quantity": 1}])
    assert call(app, body=body, headers=headers)[0] == 409
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        with transaction.atomic():
            customer.is_active = False
            customer.save(update_fields=["is_active"])
        assert token_customer_id(token) == customer.pk  # not before the commit
    for callback in callbacks:
        callback()
    assert token_customer_id(token) is None
    assert token_customer_id(other_token) is None
    assert call(app, body=body, headers=headers) == (200, {}, b"django")
    assert django_answer(body, headers)[0] == 401
    Customer.objects.filter(pk=customer.pk).update(is_active=True)  # reactivated: old tokens stay dead
    assert django_answer(body, headers)[0] == 401


def test_revoking_one_customer_leaves_another_logged_in(make_customer, django_capture_on_commit_callbacks):
    first, second = make_customer(), make_customer()
    first_token, second_token = token_issue(customer_id=first.pk), token_issue(customer_id=second.pk)
    with django_capture_on_commit_callbacks(execute=True):
        first.is_active = False
        first.save()
    assert token_customer_id(first_token) is None
    assert token_customer_id(second_token) == second.pk


def test_the_shops_asgi_application_answers_through_the_gate(headers, make_sku, django_assert_num_queries):
    from starmall.asgi import application

    sku = make_sku(stock=0)
    soldout.mark(soldout.sku_key(sku.pk))
    with django_assert_num_queries(0):
        status, _head, body = call(application, body=_body(items=[{"sku_id": sku.pk, "quantity": 1}]), headers=headers)
    assert status == 409
    assert json.loads(body)["detail"] == {"sku_id": sku.pk, "requested": 1, "available": 0}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"items": [{"sku_id": 1, "quantity": 2}, {"sku_id": 1, "quantity": 3}]}, ({1: 5}, None)),
        ({"items": [{"sku_id": 9, "quantity": 1}], "flash_sale_id": 4, "use_points": False}, ({9: 1}, 4)),
        ({"items": [{"sku_id": 9, "quantity": 1.0}]}, None),
        ({"items": []}, None),
        ({"items": [{"sku_id": 9, "quantity": 1}], "flash_sale_id": 0}, None),
        ({"items": [{"sku_id": 9, "quantity": 1}], "use_points": -1}, None),
        ({"items": [{"sku_id": 9, "quantity": 1, "extra": 1}]}, None),
    ],
)
def test_confirm_request_takes_only_what_the_serializer_takes_as_is(data, expected):
    assert confirm_request(data) == expected


def test_redis_trouble_is_warned_once_per_interval_not_per_buyer(gate, headers, make_sku, settings, caplog):
    app, inner = gate
    sku = make_sku(stock=0)
    soldout.mark(soldout.sku_key(sku.pk))
    settings.CACHES = {
        **settings.CACHES,
        "default": {**settings.CACHES["default"], "LOCATION": "redis://127.0.0.1:9/0"},
    }
    body = _body(items=[{"sku_id": sku.pk, "quantity": 1}])
    with caplog.at_level("WARNING", logger="starmall.gates.orders"):
        for _ in range(5):
            assert call(app, body=body, headers=headers) == (200, {}, b"django")
    assert len(inner.bodies) == 5
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == ["sold-out gate: Redis unavailable"]
