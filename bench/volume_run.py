"""One size of ``bench_volume.py`` in its own process: ``volume_run.py SIZE pages|pages-only|export ITERATIONS
[csv,xlsx]`` (the export's formats, default both) against ``DATABASE_URL``; prints one JSON line
``{"load": ..., "cases": {name: figures}}``."""

from __future__ import annotations

import datetime as dt
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "starmall.settings.local")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.utils import timezone  # noqa: E402

settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]


def _log(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _prepare(size: int) -> None:
    from apps.orders.models import Order

    call_command("migrate", verbosity=0)
    have = Order.objects.filter(order_no__startswith="V").count()
    if have < size:
        call_command("seed_volume", orders=size - have, customers=max(1, (size - have) // 5), stdout=sys.stderr)
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
    _log(f"{size}: {Order.objects.count()} orders in the database")


def _time(fn, iterations: int) -> dict:
    fn()  # warm-up
    samples, cpu, queries = [], [], 0
    for _ in range(iterations):
        with CaptureQueriesContext(connection) as seen:
            t, c = time.perf_counter(), time.process_time()
            fn()
            samples.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
        queries = len(seen)
    samples.sort()
    p95 = samples[min(len(samples) - 1, round(0.95 * (len(samples) - 1)))]
    return {
        "median": round(statistics.median(samples), 1),
        "p95": round(p95, 1),
        "queries": queries,
        "django_cpu_ms": round(statistics.median(cpu), 1),  # this process's CPU: the load's share aside
    }


def _get(client, url: str, **params):
    def go():
        response = client.get(url, params)
        assert response.status_code == 200, (url, params, response.status_code)
        if response.streaming:
            for _ in response.streaming_content:
                pass

    return go


def _uncached(go):
    """``go`` after dropping the dashboard's cached figures (what the first visit in a minute costs)."""
    from django.core.cache import cache

    def cold():
        cache.delete("backoffice:dashboard:figures")
        go()

    return cold


def _staff_client() -> Client:
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(
        username="volume-bench", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    return client


def _samples() -> dict:
    """Search terms and pages taken from the seeded data: the newest seeded order's numbers."""
    from apps.orders.models import Order

    order = Order.objects.filter(order_no__startswith="V", status="refunded").select_related("customer").first()
    phone_customer = Order.objects.filter(order_no__startswith="V").exclude(customer__phone="").first().customer
    named = Order.objects.filter(order_no__startswith="V").exclude(customer__nickname="").first().customer
    return {"order": order, "phone": phone_customer.phone, "nickname": named.nickname[:1] + named.nickname[1:2]}


def pages(iterations: int, with_jobs: bool = True) -> dict:
    from django.db.models import Count
    from rest_framework.test import APIClient

    from apps.accounts.models import Customer
    from apps.accounts.tokens import token_issue
    from apps.backoffice.order_workbench import TABS

    staff = _staff_client()
    s = _samples()
    order = s["order"]
    changelist = "/admin/orders/order/"
    cases = {
        "admin: order list, first page": _get(staff, changelist),
        "admin: order list, 100 rows": _get(staff, changelist, per=100),  # the page size's largest choice
        **{f"admin: tab {key}": _get(staff, changelist, tab=key) for key in TABS},
        "admin: search order number": _get(staff, changelist, q=order.order_no),
        "admin: search account phone": _get(staff, changelist, q=s["phone"]),
        "admin: search receiver phone": _get(staff, changelist, q=order.receiver_phone),
        "admin: search receiver name": _get(staff, changelist, q=order.receiver_name),
        "admin: search nickname start": _get(staff, changelist, q=s["nickname"]),
        "admin: one order's page": _get(staff, f"{changelist}{order.pk}/change/"),
        "admin: dashboard": _get(staff, "/admin/"),
        "admin: dashboard, figures not cached": _uncached(_get(staff, "/admin/")),
    }
    busiest = Customer.objects.annotate(n=Count("orders")).order_by("-n").first()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(customer_id=busiest.pk)}")
    cases["api: order list (busiest customer)"] = _get(api, "/api/v1/orders")
    cases["api: order counts (busiest customer)"] = _get(api, "/api/v1/orders/counts")
    out = {}
    for name, fn in cases.items():
        out[name] = _time(fn, iterations)
        _log(f"  {name}: {out[name]}")
    if with_jobs:
        out.update(jobs())
    return out


def export(formats: tuple[str, ...] = ("csv", "xlsx")) -> dict:
    """A month's orders, CSV and Excel (both streamed): first byte, whole, CPU, peak-RSS growth (MB)."""
    staff = _staff_client()
    assert staff.get("/admin/backoffice/export/").status_code == 200  # the process warm (imports, templates)
    end = timezone.localdate() - dt.timedelta(days=1)
    start = end - dt.timedelta(days=30)
    out = {}
    for fmt in formats:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with CaptureQueriesContext(connection) as seen:
            t, cpu = time.perf_counter(), time.process_time()
            response = staff.get(
                "/admin/backoffice/export/", {"kind": "orders", "start": start, "end": end, "fmt": fmt}
            )
            first = None
            size = 0
            for chunk in response.streaming_content:
                first = first or time.perf_counter()
                size += len(chunk)
            whole = (time.perf_counter() - t) * 1000
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        out[f"export: a month of orders, {fmt}"] = {
            "median": round(whole, 1),
            "p95": round(whole, 1),
            "queries": len(seen),
            "first_byte_ms": round((first - t) * 1000, 1),
            "cpu_ms": round((time.process_time() - cpu) * 1000, 1),
            "rss_growth_mb": round(grown, 1),
            "bytes": size,
        }
        _log(f"  export {fmt}: {out[f'export: a month of orders, {fmt}']}")
    return out


def _loop(job, cap: int = 100) -> int:
    done = 0
    for _ in range(cap):
        n = job()
        done += n
        if not n:
            break
    return done


def jobs() -> dict:
    """Each job looped until it has no more work, in a transaction rolled back afterwards."""
    from apps.accounts.wallet import points_release_due
    from apps.distribution.commissions import commissions_release_due
    from apps.orders.followups import followups_redispatch
    from apps.orders.shipments import orders_auto_receive
    from apps.payments import reconciliation
    from apps.payments.order_lifecycle import orders_expire_due
    from apps.payments.wechat_bill import Bill

    busiest = timezone.localdate() - dt.timedelta(days=3)
    cases = {
        "job: unpaid timeout": lambda: _loop(lambda: sum(orders_expire_due().values())),
        "job: follow-up redispatch": lambda: _loop(followups_redispatch),
        "job: commission release": lambda: _loop(commissions_release_due),
        "job: points release": lambda: _loop(points_release_due),
        "job: automatic receipt": lambda: _loop(orders_auto_receive),
        "job: reconciliation, local side of a day": lambda: len(reconciliation.local_rows(busiest, Bill())[0]),
    }
    out = {}
    for name, fn in cases.items():
        with transaction.atomic():
            with CaptureQueriesContext(connection) as seen:
                t = time.perf_counter()
                work = fn()
                ms = round((time.perf_counter() - t) * 1000, 1)
            transaction.set_rollback(True)
        out[name] = {"median": ms, "p95": ms, "queries": len(seen), "rows": work}
        _log(f"  {name}: {out[name]}")
    return out


def main() -> None:
    size, part, iterations = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    if part in ("pages", "pages-only"):
        _prepare(size)
        cases = pages(iterations, with_jobs=part == "pages")
    else:
        cases = export(tuple(sys.argv[4].split(",")) if len(sys.argv) > 4 else ("csv", "xlsx"))
    print(json.dumps({"load": round(os.getloadavg()[0], 1), "cases": cases}))


if __name__ == "__main__":
    main()
