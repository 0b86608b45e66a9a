"""Benchmark: order confirm + create, and payment notification handling, in-process.

Usage: ``python bench/bench_orders.py [--orders 300]``. Runs on ``DATABASE_URL`` / ``REDIS_URL``
when set, else on a throw-away SQLite file (var/bench-orders.sqlite3) and the embedded Redis.
Prints p50 / p95 / max latency in milliseconds and throughput. Targets (2-core machine):
create p95 < 50 ms on SQLite, notification p95 < 30 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "starmall.settings.local")
if not os.environ.get("DATABASE_URL"):
    scratch = ROOT / "var" / "bench-orders.sqlite3"
    scratch.unlink(missing_ok=True)  # start empty every time: comparable numbers
    os.environ["DATABASE_URL"] = f"sqlite:///{scratch}"
os.environ.setdefault("LOG_LEVEL", "WARNING")


def summary(name: str, samples: list[float]) -> None:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[int(len(ms) * 0.95) - 1]
    print(
        f"{name:<28} n={len(ms):<5} p50={statistics.median(ms):7.2f} ms  p95={p95:7.2f} ms  "
        f"max={ms[-1]:7.2f} ms  {len(ms) / (sum(ms) / 1000):8.1f}/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--orders", type=int, default=300)
    args = parser.parse_args()

    if not os.environ.get("REDIS_URL"):
        from starmall import embedded_redis

        embedded_redis.ensure_running()
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.conf import settings
    from wechatpy.pay.utils import calculate_signature

    from apps.accounts.models import Address, Customer
    from apps.catalog.models import Category, Product, Sku
    from apps.orders.confirm import order_confirm
    from apps.orders.create import order_create
    from apps.payments import notifications
    from apps.payments.models import Payment

    category = Category.objects.create(name="bench")
    product = Product.objects.create(category=category, name="bench")
    sku = Sku.objects.create(product=product, price_fen=12800, stock=args.orders)
    customer = Customer.objects.create(openid=f"bench-{time.time_ns()}")
    address = Address.objects.create(customer=customer, name="b", phone="1", province="p", city="c", detail="d")

    create, notify = [], []
    for i in range(args.orders):
        t0 = time.perf_counter()
        key = order_confirm(customer=customer, address_id=address.pk, items=[{"sku_id": sku.pk, "quantity": 1}])[
            "order_key"
        ]
        order, _ = order_create(customer=customer, order_key=key)
        create.append(time.perf_counter() - t0)
        Payment.objects.create(order=order, method="wechat", out_trade_no=order.order_no, total_fee=order.pay_fen)
        fields = {
            "appid": settings.WECHAT_APPID,
            "mch_id": settings.WECHAT_MCH_ID,
            "nonce_str": "x",
            "return_code": "SUCCESS",
            "result_code": "SUCCESS",
            "total_fee": str(order.pay_fen),
            "transaction_id": f"42{i:026d}",
            "out_trade_no": order.order_no,
            "time_end": "20261130120000",
        }
        fields["sign"] = calculate_signature(fields, settings.WECHAT_PAY_API_KEY)
        body = ("<xml>" + "".join(f"<{k}>{v}</{k}>" for k, v in fields.items()) + "</xml>").encode()
        t0 = time.perf_counter()
        assert b"SUCCESS" in notifications.payment_notification_handle(body)
        notify.append(time.perf_counter() - t0)
    assert Sku.objects.get(pk=sku.pk).stock == 0
    print(f"database: {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}")
    summary("order confirm+create", create)
    summary("payment notification", notify)


if __name__ == "__main__":
    main()
