"""CPU per order create when creates arrive together: ``orders_create`` in batches, in one process.

Usage: ``python bench/profile_create.py [--plain] [--batch 25] [--profile]``. Makes 500 customers,
a draft each (``order_confirm``; a live 秒杀 of the SKU unless ``--plain``), then creates their
orders ``--batch`` at a time as the create gate does, and prints the CPU milliseconds per create
and the statements per batch (``--profile``: the cProfile table, by own time). PostgreSQL and
Redis as ``bench/profile_hot.py`` (database ``starmall_profile``, created and dropped).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import profile_hot  # noqa: E402  (sets the environment: database, Redis, settings)

N = 500


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--plain", action="store_true")
    parser.add_argument("--batch", type=int, default=25)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    profile_hot.database_create()
    try:
        run(plain=args.plain, batch=args.batch, profile=args.profile)
    finally:
        profile_hot.database_drop()


def run(*, plain: bool, batch: int, profile: bool) -> None:
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django_redis import get_redis_connection

    call_command("migrate", verbosity=0)
    get_redis_connection("default").flushdb()
    from apps.accounts.models import Address, Customer
    from apps.catalog.models import Category, Product, Sku
    from apps.orders.confirm import order_confirm
    from apps.orders.create import CreateRequest, orders_create

    product = Product.objects.create(category=Category.objects.create(name="p"), name="秒杀")
    sku = Sku.objects.create(product=product, price_fen=990, stock=N)
    extra = {} if plain else {"flash_sale_id": profile_hot.sale_live(sku.pk, N).pk}
    requests = []
    for i in range(N):
        customer = Customer.objects.create(openid=f"oProfileCreate{i:08d}")
        address = Address.objects.create(
            customer=customer, name="b", phone="13800000000", province="p", city="c", detail="d"
        )
        draft = order_confirm(
            customer=customer, items=[{"sku_id": sku.pk, "quantity": 1}], address_id=address.pk, **extra
        )
        requests.append(CreateRequest(customer_id=customer.pk, order_key=draft["order_key"]))
    profiler = cProfile.Profile() if profile else None
    cpu0 = time.process_time()
    with CaptureQueriesContext(connection) as queries:
        if profiler:
            profiler.enable()
        for start in range(0, N, batch):
            refused = [r for r in orders_create(requests[start : start + batch]) if isinstance(r, Exception)]
            assert not refused, refused[:2]
        if profiler:
            profiler.disable()
    cpu_ms = (time.process_time() - cpu0) / N * 1000
    print(
        f"===== {N} creates in batches of {batch}: {cpu_ms:.2f} ms CPU per create, "
        f"{len(queries.captured_queries) / -(-N // batch):.1f} statements per batch"
    )
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
