"""Profile the flash-sale hot path in one process (pyinstrument, the ``dev`` extra).

Usage: ``python bench/profile_hot.py [--cpu] [confirm|create|soldout|notify|browse ...]``
(``--cpu``: no profiler, only the CPU milliseconds each request costs this process, the
number to compare before and after a change). Runs on the
machine's PostgreSQL (database ``starmall_profile``, created and dropped) and Redis database
``BENCH_REDIS_DB`` (11), through Django's test client: the whole middleware/DRF stack, no
network. Prints the queries each request runs and a pyinstrument tree per path.
"""

from __future__ import annotations

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
    DATABASE_URL=urllib.parse.urlunsplit((PG.scheme, PG.netloc, "/starmall_profile", "", "")),
    REDIS_URL=urllib.parse.urlunsplit((_redis.scheme, _redis.netloc, f"/{os.environ.get('BENCH_REDIS_DB', '11')}", "", "")),
    DJANGO_SETTINGS_MODULE="starmall.settings.local", DJANGO_DEBUG="false", LOG_LEVEL="WARNING",
    STARMALL_VAR_DIR=str(ROOT / "var" / "bench"),
)
N = 200


def main() -> None:
    import psycopg

    admin = urllib.parse.urlunsplit(("postgresql", PG.netloc, "/postgres", "", ""))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS starmall_profile WITH (FORCE)")
        conn.execute("CREATE DATABASE starmall_profile")
    try:
        args = [a for a in sys.argv[1:] if a != "--cpu"]
        run(args or ["confirm", "create", "soldout", "notify", "browse"], profile="--cpu" not in sys.argv)
    finally:
        from django.db import connections

        connections.close_all()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS starmall_profile WITH (FORCE)")


def run(paths: list[str], profile: bool = True) -> None:
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from pyinstrument import Profiler

    call_command("migrate", verbosity=0)
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

    def post(path, body, token):
        return client.post(path, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")

    keys = []
    for name in paths:
        profiler = Profiler(interval=0.001) if profile else None
        cpu0 = time.process_time()
        with CaptureQueriesContext(connection) as queries:
            if profiler:
                profiler.start()
            for i, (_c, a, token) in enumerate(customers):
                if name == "confirm":
                    r = post("/api/v1/orders/confirm", {"items": [{"sku_id": sku.pk, "quantity": 1}], "address_id": a.pk}, token)
                    keys.append((r.json()["order_key"], token))
                elif name == "create":
                    r = post("/api/v1/orders", {"order_key": keys[i][0]}, keys[i][1])
                    assert r.status_code == 201, r.content
                elif name == "soldout":
                    r = post("/api/v1/orders/confirm", {"items": [{"sku_id": empty.pk, "quantity": 1}], "address_id": a.pk}, token)
                    assert r.status_code == 409, r.content
                elif name == "browse":
                    r = client.get("/api/v1/products" if i % 2 else f"/api/v1/products/{product.pk}")
                    assert r.status_code == 200
            if profiler:
                profiler.stop()
        cpu_ms = (time.process_time() - cpu0) / N * 1000
        if not profiler:
            print(f"===== {name}: {len(queries.captured_queries) / N:.1f} queries, {cpu_ms:.2f} ms CPU per request")
            continue
        print(f"===== {name}: {len(queries.captured_queries) / N:.1f} queries per request; "
              f"{profiler.last_session.duration / N * 1000:.2f} ms per request, {cpu_ms:.2f} ms CPU (with the profiler)")
        for q in queries.captured_queries[-12:]:
            print("   ", q["sql"][:160])
        print(profiler.output_text(unicode=True, color=False, show_all=False, time="percent_of_total"))


if __name__ == "__main__":
    main()
