"""Profile the flash-sale hot path in one process (pyinstrument, the ``dev`` extra).

Usage: ``python bench/profile_hot.py [--cpu] [--flash] [confirm|create|soldout|gate|winner|notify|browse ...]``
(``winner``, with ``--flash``: a 秒杀 winner's confirm and create answered by the ASGI gate)
(``--flash``: confirm and create buy in a live 秒杀 of the SKU, whose quota is in Redis)
(``notify``: the first "paid" notification of each order ``create`` made, so after ``confirm create``)
(``--cpu``: no profiler, only the CPU milliseconds each request costs this process, the
number to compare before and after a change). Runs on the
machine's PostgreSQL (database ``starmall_profile``, created and dropped) and Redis database
``BENCH_REDIS_DB`` (11), through Django's test client: the whole middleware/DRF stack, no
network. Prints the queries each request runs and a pyinstrument tree per path.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PG = urllib.parse.urlsplit(os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/")
_redis = urllib.parse.urlsplit(os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0")
os.environ.update(
    DATABASE_URL=urllib.parse.urlunsplit(
        (PG.scheme, PG.netloc, "/" + os.environ.get("PROFILE_DB_NAME", "starmall_profile"), "", "")
    ),
    REDIS_URL=urllib.parse.urlunsplit(
        (_redis.scheme, _redis.netloc, f"/{os.environ.get('BENCH_REDIS_DB', '11')}", "", "")
    ),
    DJANGO_SETTINGS_MODULE="starmall.settings.local",
    DJANGO_DEBUG="false",
    LOG_LEVEL="WARNING",
    STARMALL_VAR_DIR=str(ROOT / "var" / "bench"),
)
N = 200
DB_NAME = os.environ.get("PROFILE_DB_NAME", "starmall_profile")
_ADMIN = urllib.parse.urlunsplit(("postgresql", PG.netloc, "/postgres", "", ""))


def sale_live(sku_id: int, units: int):
    """A 秒杀 of ``units`` of the SKU at 5.00 yuan, one per customer, live for the next hour."""
    from django.utils import timezone

    from apps.marketing import flash_sales

    now = timezone.now()
    return flash_sales.flash_sale_schedule(
        title="profile",
        sku_id=sku_id,
        price_fen=500,
        stock=units,
        starts_at=now - dt.timedelta(minutes=1),
        ends_at=now + dt.timedelta(hours=1),
        limit_per_customer=1,
    )


def database_create() -> None:
    """The profile's own database, created anew (the server of ``DATABASE_URL``)."""
    import psycopg

    with psycopg.connect(_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DB_NAME}"')


def database_drop() -> None:
    import psycopg
    from django.db import connections

    connections.close_all()
    with psycopg.connect(_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')


def main() -> None:
    database_create()
    try:
        args = [a for a in sys.argv[1:] if a not in ("--cpu", "--flash")]
        run(
            args or ["confirm", "create", "soldout", "gate", "notify", "browse"],
            profile="--cpu" not in sys.argv,
            flash="--flash" in sys.argv,
        )
    finally:
        database_drop()


def run(paths: list[str], profile: bool = True, flash: bool = False) -> None:
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from pyinstrument import Profiler

    call_command("migrate", verbosity=0)
    from django_redis import get_redis_connection

    get_redis_connection("default").flushdb()  # a previous run's quotas and allowances (same ids) are not this one's
    from apps.accounts.models import Address, Customer
    from apps.accounts.tokens import token_issue
    from apps.catalog.models import Category, Product, Sku

    category = Category.objects.create(name="p")
    product = Product.objects.create(category=category, name="秒杀")
    sku = Sku.objects.create(product=product, price_fen=990, stock=N)
    empty = Sku.objects.create(product=product, price_fen=990, stock=0)
    customers = []
    for i in range(N):
        c = Customer.objects.create(openid=f"oProfile{i:08d}")
        a = Address.objects.create(customer=c, name="b", phone="13800000000", province="p", city="c", detail="d")
        customers.append((c, a, token_issue(customer_id=c.pk)))
    client = Client(SERVER_NAME="127.0.0.1")
    extra = {}
    if flash:  # a live 秒杀 of the whole stock, one per customer, its quota loaded into Redis
        extra = {"flash_sale_id": sale_live(sku.pk, N).pk}

    def post(path, body, token):
        return client.post(path, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")

    keys, notices = [], []
    for name in paths:
        if name == "gate":
            _gate(empty.pk, customers[0][2])
            continue
        if name == "winner":  # a 秒杀 winner's confirm and create, both answered by the gate
            if not flash:
                print("===== winner: needs --flash")
                continue
            _winners(customers, sku.pk, extra["flash_sale_id"], profile)
            continue
        if name == "notify":  # set-up, not measured: a pending WeChat payment per created order
            if "create" not in paths[: paths.index("notify")]:
                print("===== notify: needs confirm and create first (profile_hot.py confirm create notify)")
                continue
            notices = _notices()
        profiler = Profiler(interval=0.001) if profile else None
        cpu0 = time.process_time()
        with CaptureQueriesContext(connection) as queries:
            if profiler:
                profiler.start()
            for i, (_c, a, token) in enumerate(customers):
                if name == "confirm":
                    r = post(
                        "/api/v1/orders/confirm",
                        {"items": [{"sku_id": sku.pk, "quantity": 1}], "address_id": a.pk, **extra},
                        token,
                    )
                    keys.append((r.json()["order_key"], token))
                elif name == "create":
                    r = post("/api/v1/orders", {"order_key": keys[i][0]}, keys[i][1])
                    assert r.status_code == 201, r.content
                elif name == "soldout":
                    r = post(
                        "/api/v1/orders/confirm",
                        {"items": [{"sku_id": empty.pk, "quantity": 1}], "address_id": a.pk},
                        token,
                    )
                    assert r.status_code == 409, r.content
                elif name == "notify":
                    r = client.post("/api/v1/payments/wechat/notify", notices[i], content_type="text/xml")
                    assert b"SUCCESS" in r.content, r.content
                elif name == "browse":
                    r = client.get("/api/v1/products" if i % 2 else f"/api/v1/products/{product.pk}")
                    assert r.status_code == 200
            if profiler:
                profiler.stop()
        cpu_ms = (time.process_time() - cpu0) / N * 1000
        if not profiler:
            print(f"===== {name}: {len(queries.captured_queries) / N:.1f} queries, {cpu_ms:.2f} ms CPU per request")
            continue
        print(
            f"===== {name}: {len(queries.captured_queries) / N:.1f} queries per request; "
            f"{profiler.last_session.duration / N * 1000:.2f} ms per request, {cpu_ms:.2f} ms CPU (with the profiler)"
        )
        for q in queries.captured_queries[-12:]:
            print("   ", q["sql"][:160])
        print(profiler.output_text(unicode=True, color=False, show_all=False, time="percent_of_total"))


def _gate(sku_id: int, token: str) -> None:
    """CPU per sold-out confirm answered by the ASGI gate (``starmall.gates.orders``) in
    one event loop: the same request as ``soldout``, which Django answers, for comparison."""
    import asyncio
    import json

    from apps.catalog import soldout
    from starmall.gates.orders import OrderGate

    async def django(scope, receive, send):
        raise SystemExit("the gate passed a sold-out confirm to Django")

    gate = OrderGate(django)
    body = json.dumps({"items": [{"sku_id": sku_id, "quantity": 1}]}).encode()
    statuses = []

    async def main():
        for _ in range(N * 10):
            statuses.append((await _post(gate, "/api/v1/orders/confirm", body, token))[0])

    soldout.mark(soldout.sku_key(sku_id))
    cpu0 = time.process_time()
    asyncio.run(main())
    assert statuses == [409] * (N * 10), set(statuses)
    print(
        f"===== gate: 0 queries, {(time.process_time() - cpu0) / (N * 10) * 1000:.2f} ms CPU per request "
        f"(a sold-out confirm answered before Django)"
    )


async def _post(app, path: str, body: bytes, token: str) -> tuple[int, bytes]:
    """One JSON ``POST`` with a bearer token through the ASGI ``app``, as uvicorn hands it over;
    ``(status, body)``."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "scheme": "http",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"authorization", f"Bearer {token}".encode()),
        ],
    }
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    sent = []

    async def receive():
        return messages.pop(0)

    async def send(message):
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def _winners(customers: list, sku_id: int, sale_id: int, profile: bool) -> None:
    """CPU per 秒杀 winner whose confirm and create the ASGI gate answers (flash_confirm,
    creates), in one event loop as in a worker; PostgreSQL's and Redis's CPU not counted."""
    import asyncio
    import json

    from pyinstrument import Profiler

    from apps.accounts import address_cards
    from apps.shipping import selectors as freight
    from starmall.gates.orders import OrderGate

    freight.all_terms()  # what a running shop has in Redis: the freight terms, each buyer's address card
    for c, _a, _token in customers:
        address_cards.card_refresh(c.pk)

    async def django(scope, receive, send):
        raise SystemExit(f"the gate passed {scope['path']} to Django")

    gate = OrderGate(django)

    async def call(path: str, body: bytes, token: str) -> dict:
        return json.loads((await _post(gate, path, body, token))[1])

    async def main():
        for _c, a, token in customers:
            confirm = {"items": [{"sku_id": sku_id, "quantity": 1}], "address_id": a.pk, "flash_sale_id": sale_id}
            draft = await call("/api/v1/orders/confirm", json.dumps(confirm).encode(), token)
            order = await call("/api/v1/orders", json.dumps({"order_key": draft["order_key"]}).encode(), token)
            assert order["status"] == "unpaid", order
        await gate.aclose()

    profiler = Profiler(interval=0.0005) if profile else None
    cpu0 = time.process_time()
    if profiler:
        profiler.start()
    asyncio.run(main())
    if profiler:
        profiler.stop()
    print(f"===== winner: {(time.process_time() - cpu0) / N * 1000:.2f} ms CPU per confirm + create (the gate)")
    if profiler:
        print(profiler.output_text(unicode=True, color=False, show_all=False, time="percent_of_total"))


def _notices() -> list[bytes]:
    """A pending WeChat payment for each unpaid order, and its signed "paid" notification, as
    ``bench_shop.storm_orders`` makes them (``bench/notices.py``)."""
    from django.utils import timezone

    from apps.orders.models import Order
    from apps.payments.models import Payment
    from bench.notices import paid_notices

    orders = list(Order.objects.filter(status="unpaid").select_related("customer").order_by("id"))
    Payment.objects.bulk_create(
        [Payment(order=o, method="wechat", out_trade_no=o.order_no, total_fee=o.pay_fen) for o in orders]
    )
    return paid_notices(orders, stamp=timezone.localtime().strftime("%Y%m%d%H%M%S"))


if __name__ == "__main__":
    main()
