"""Benchmark: almanac search latency, answered from the (term, kind, date) index.

    DJANGO_SETTINGS_MODULE=starmall.settings.local python bench/bench_almanac.py [--iterations 200] [--full]

Uses the configured database (DATABASE_URL) and Redis (REDIS_URL or the embedded one). If the
window from 1 January last year to 31 December in three years is not loaded, it loads it
first (``--full`` loads 1901..2100, about a minute). Prints, per query, the median / p95 / p99 /
max latency in milliseconds:

* ``sql``: ``selectors.good_days`` for the next 30 days — the one indexed SELECT;
* ``next30``: ``selectors.search(days=366, limit=30)`` — the next 30 good days (range check +
  the SELECT);
* ``api cold``: GET /api/v1/almanac/search with an empty cache (new generation each time);
* ``api warm``: the same request answered from Redis.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "starmall.settings.local")

WORDS = ("搬家", "结婚", "开业", "装修", "签约", "看病")


def _ms(samples: list[float]) -> str:
    samples = sorted(samples)

    def pct(p: float) -> float:
        return samples[min(len(samples) - 1, int(p * len(samples)))] * 1000

    return (
        f"median {statistics.median(samples) * 1000:7.3f}  p95 {pct(0.95):7.3f}  "
        f"p99 {pct(0.99):7.3f}  max {samples[-1] * 1000:7.3f} ms"
    )


def _time(fn, iterations: int) -> list[float]:
    fn()  # warm up connections and caches of the process
    out = []
    for _ in range(iterations):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--full", action="store_true", help="make sure 1901..2100 is loaded first")
    args = parser.parse_args()

    if not os.environ.get("REDIS_URL"):
        from starmall import embedded_redis

        embedded_redis.ensure_running()
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import DatabaseError, connection
    from django.test import Client
    from django.utils import timezone

    from apps.almanac import caching, compute, selectors, services
    from apps.almanac.models import AlmanacActivity, AlmanacDay, AlmanacRange

    call_command("migrate", verbosity=0)  # a fresh clone: make bench needs no make run first
    try:
        AlmanacRange.objects.exists()
    except DatabaseError as exc:
        sys.exit(f"the almanac tables are missing ({exc}); run: python manage.py migrate")

    today = timezone.localdate()
    start, end = (
        (compute.FIRST_DATE, compute.LAST_DATE)
        if args.full
        else (dt.date(today.year - 1, 1, 1), dt.date(today.year + 3, 12, 31))
    )
    result = services.almanac_load(start=start, end=end)
    if result.days_loaded:
        print(f"loaded {result.days_loaded} days first ({result.seconds:.1f} s)")

    print(
        f"database: {connection.vendor} ({connection.settings_dict['NAME']}); "
        f"{AlmanacDay.objects.count()} days, {AlmanacActivity.objects.count()} index rows"
    )
    print(f"today (Asia/Shanghai): {today}; {args.iterations} iterations per line\n")

    client = Client(HTTP_HOST="localhost")
    for word in WORDS:
        terms = selectors.resolve_activity(word)
        window_end = today + dt.timedelta(days=29)
        found = list(selectors.good_days(terms=terms, start=today, end=window_end).values_list("date", flat=True))
        print(f"{word} -> {'/'.join(terms)}: {len(found)} good days in the next 30")
        sql = _time(lambda: list(selectors.good_days(terms=terms, start=today, end=window_end)), args.iterations)
        print(f"  sql       {_ms(sql)}")
        nxt = _time(lambda: selectors.search(activity=word, start=today, days=366, limit=30), args.iterations)
        print(f"  next30    {_ms(nxt)}")
        url = f"/api/v1/almanac/search?activity={word}&days=30"

        def cold():
            caching.bump()
            assert client.get(url).status_code == 200

        print(f"  api cold  {_ms(_time(cold, args.iterations))}")
        print(f"  api warm  {_ms(_time(lambda: client.get(url), args.iterations))}")


if __name__ == "__main__":
    main()
