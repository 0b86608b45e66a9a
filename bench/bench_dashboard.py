"""Benchmark: the back-office dashboard's selectors with 100,000 orders.

Usage: ``python bench/bench_dashboard.py [--orders 100000] [--iterations 5]``. Runs in a bench
database of its own: a throw-away SQLite file (var/bench-dashboard.sqlite3), or, when
``DATABASE_URL`` is PostgreSQL, a database ``<name>_bench_dashboard`` beside it (dropped and
created again). Orders (spread over the last 60 Shanghai days, ~70 % paid, one line each),
refunds and a week of slots for 2 teachers are written with bulk_create; then every selector of
``apps/backoffice/selectors.py`` is timed (median and max of the runs, milliseconds).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "starmall.settings.local")
os.environ.setdefault("LOG_LEVEL", "WARNING")


def _bench_database() -> None:
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        import psycopg

        parts = urlsplit(url)
        name = parts.path.lstrip("/") + "_bench_dashboard"
        admin_url = urlunsplit(parts._replace(path="/postgres"))
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        os.environ["DATABASE_URL"] = urlunsplit(parts._replace(path="/" + name))
    else:
        scratch = ROOT / "var" / "bench-dashboard.sqlite3"
        scratch.parent.mkdir(exist_ok=True)
        scratch.unlink(missing_ok=True)
        os.environ["DATABASE_URL"] = f"sqlite:///{scratch}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--orders", type=int, default=100_000)
    parser.add_argument("--iterations", type=int, default=5)
    args = parser.parse_args()
    _bench_database()
    if not os.environ.get("REDIS_URL"):
        from starmall import embedded_redis

        embedded_redis.ensure_running()
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.utils import timezone

    call_command("migrate", verbosity=0)
    from apps.accounts.models import Customer
    from apps.appointments.models import Slot
    from apps.backoffice import selectors
    from apps.catalog.models import Category, Product, Sku, Teacher
    from apps.orders.models import Order, OrderLine, OrderStatus
    from apps.payments.models import Payment, Refund

    print(f"database: {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}, orders: {args.orders}")
    rng = random.Random(12)
    category = Category.objects.create(name="bench")
    products = [Product.objects.create(category=category, name=f"商品{i}") for i in range(20)]
    skus = [
        Sku.objects.create(product=p, price_fen=1000 + 100 * i, stock=rng.randint(0, 50))
        for i, p in enumerate(products)
    ]
    customers = Customer.objects.bulk_create([Customer(openid=f"bench-{i}") for i in range(500)])
    now = timezone.now()
    Order._meta.get_field("created_at").auto_now_add = False  # this process only: spread creation times
    t0 = time.perf_counter()
    batch = 5000
    for start in range(0, args.orders, batch):
        orders, lines = [], []
        for i in range(start, min(start + batch, args.orders)):
            created = now - dt.timedelta(seconds=rng.randint(0, 60 * 86400))
            paid = rng.random() < 0.7
            sku = rng.choice(skus)
            qty = rng.randint(1, 3)
            status = (
                rng.choice([OrderStatus.PAID, OrderStatus.SHIPPED, OrderStatus.COMPLETED])
                if paid
                else rng.choice([OrderStatus.UNPAID, OrderStatus.CANCELLED])
            )
            orders.append(
                Order(
                    order_no=f"B{i:010d}",
                    order_key=f"bench-{i}",
                    customer=rng.choice(customers),
                    status=status,
                    goods_fen=sku.price_fen * qty,
                    pay_fen=sku.price_fen * qty,
                    pay_deadline=created,
                    created_at=created,
                    paid_at=created + dt.timedelta(minutes=2) if paid else None,
                )
            )
            lines.append((sku, qty))
        made = Order.objects.bulk_create(orders, batch_size=1000)
        if not made[0].pk:  # backends without RETURNING
            made = list(Order.objects.filter(order_no__in=[o.order_no for o in orders]).order_by("id"))
        OrderLine.objects.bulk_create(
            [
                OrderLine(
                    order=o,
                    sku=sku,
                    product_id=sku.product_id,
                    name="x",
                    price_fen=sku.price_fen,
                    quantity=qty,
                    amount_fen=sku.price_fen * qty,
                )
                for o, (sku, qty) in zip(made, lines)
            ]
        )
        paid_orders = [o for o in made if o.paid_at][:200]
        payments = Payment.objects.bulk_create(
            [
                Payment(
                    order=o,
                    method="wechat",
                    out_trade_no=o.order_no,
                    total_fee=o.pay_fen,
                    status="paid",
                    paid_at=o.paid_at,
                )
                for o in paid_orders
            ]
        )
        if not payments[0].pk:
            payments = list(Payment.objects.filter(out_trade_no__in=[o.order_no for o in paid_orders]).order_by("id"))
        Refund.objects.bulk_create(
            [
                Refund(
                    order_id=p.order_id,
                    payment=p,
                    out_refund_no=f"R{p.out_trade_no}",
                    refund_fen=p.total_fee,
                    reason="after_sale",
                    status="success",
                    succeeded_at=p.paid_at,
                )
                for p in payments[:20]
            ]
        )
    teachers = [Teacher.objects.create(name=f"老师{i}") for i in range(2)]
    today = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
    Slot.objects.bulk_create(
        [
            Slot(
                teacher=t,
                start=today + dt.timedelta(days=d, hours=h),
                end=today + dt.timedelta(days=d, hours=h + 1),
                capacity=1,
                booked=rng.randint(0, 1),
            )
            for t in teachers
            for d in range(-30, 8)
            for h in (9, 11, 13, 15, 17, 19)
        ]
    )
    print(
        f"setup: {time.perf_counter() - t0:.1f} s ({Order.objects.count()} orders, "
        f"{OrderLine.objects.count()} lines, {Refund.objects.count()} refunds)"
    )
    today_p, month_p = selectors.periods()
    cases = {
        "summary(today)": lambda: selectors.summary(today_p),
        "summary(30 days)": lambda: selectors.summary(month_p),
        "revenue_by_day(30 days)": lambda: selectors.revenue_by_day(month_p),
        "top_products(30 days)": lambda: selectors.top_products(month_p),
        "occupancy(30 days)": lambda: selectors.occupancy(month_p.start, today_p.end),
        "todo_counts": selectors.todo_counts,
        "dashboard (all of it)": selectors.dashboard,
    }
    for name, fn in cases.items():
        fn()
        samples = []
        for _ in range(args.iterations):
            t = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t) * 1000)
        print(f"{name:<28} median {statistics.median(samples):8.1f} ms  max {max(samples):8.1f} ms")


if __name__ == "__main__":
    main()
