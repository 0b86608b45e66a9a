"""Benchmark: a shop with many orders (``manage.py seed_volume``), page by page.

Usage: ``python bench/bench_volume.py [--orders 10000,100000] [--iterations 7] [--fresh] [--pages-only]``
(``--pages-only``: the pages and the API, no export and no job).
Each size has its own database beside ``DATABASE_URL``'s (PostgreSQL: ``<name>_vol_<size>``;
SQLite: var/bench-volume-<size>.sqlite3), seeded once and reused by later runs (``--fresh``
drops it). Each figure is taken in-process with Django's test client (no HTTP server), after
one warm-up, as median and p95 in ms with the queries the request ran:

- the admin order list: first page, each workbench tab, the search box by order number,
  account phone, receiver phone, receiver name, nickname; one order's page; the dashboard;
- the customer API: ``GET /api/v1/orders`` and ``/orders/counts`` of the busiest customer;
- a month's export (CSV and Excel, both streamed): time to the first byte, the whole, the CPU,
  and the growth of the process's peak RSS (measured in a fresh process of its own);
- the jobs: the unpaid timeout, follow-up redispatch, commission and points release and the
  automatic receipt, each looped until it has no more work (a day's worth), and the local side of
  a day's reconciliation — all inside a transaction rolled back at the end, so reruns repeat.

Prints a table per size and, for two or more sizes, the ratio of the last to the one before.
Writes bench/results/volume-<UTC time>.json. ``make bench`` runs it at 10,000 orders.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "starmall.settings.local")
os.environ.setdefault("LOG_LEVEL", "WARNING")


def _database_url(size: int, fresh: bool) -> str:
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        import psycopg

        parts = urlsplit(url)
        name = f"{parts.path.lstrip('/') or 'starmall'}_vol_{size}"
        with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
            if fresh:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
                conn.execute(f'CREATE DATABASE "{name}"')
        return urlunsplit(parts._replace(path="/" + name))
    scratch = ROOT / "var" / f"bench-volume-{size}.sqlite3"
    scratch.parent.mkdir(exist_ok=True)
    if fresh:
        scratch.unlink(missing_ok=True)
    return f"sqlite:///{scratch}"


def _child(size: int, part: str, iterations: int, fresh: bool) -> dict:
    env = {**os.environ, "DATABASE_URL": _database_url(size, fresh and part.startswith("pages"))}
    cmd = [sys.executable, str(ROOT / "bench" / "volume_run.py"), str(size), part, str(iterations)]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    sys.stderr.write(done.stderr)
    if done.returncode:
        raise SystemExit(f"{part} at {size} failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _print(size: int, figures: dict) -> None:
    print(f"--- {size:,} orders (load {figures['load']})")
    for name, f in figures["cases"].items():
        extra = "".join(f"  {k} {v}" for k, v in f.items() if k not in ("median", "p95", "queries"))
        print(f"{name:<36} median {f['median']:8.1f}  p95 {f['p95']:8.1f} ms  queries {f['queries']:>4}{extra}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--orders", default="10000", help="sizes, comma-separated")
    parser.add_argument("--iterations", type=int, default=7)
    parser.add_argument("--fresh", action="store_true", help="drop and seed each size's database again")
    parser.add_argument("--pages-only", action="store_true", help="the pages and the API: no export, no job")
    args = parser.parse_args()
    if not os.environ.get("REDIS_URL"):
        from starmall import embedded_redis

        embedded_redis.ensure_running()
    results = {}
    for size in [int(s) for s in args.orders.split(",")]:
        pages = _child(size, "pages-only" if args.pages_only else "pages", args.iterations, args.fresh)
        if not args.pages_only:
            pages["cases"].update(_child(size, "export", 1, False)["cases"])
        results[size] = pages
        _print(size, pages)
    sizes = sorted(results)
    if len(sizes) > 1:
        small, big = sizes[-2], sizes[-1]
        print(f"--- ratio {big:,} / {small:,} orders (p95)")
        for name, f in results[big]["cases"].items():
            before = results[small]["cases"].get(name, {}).get("p95")
            if before:
                print(f"{name:<36} {f['p95'] / before:6.2f}x")
    out = ROOT / "bench" / "results" / f"volume-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    print(f"written: {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
