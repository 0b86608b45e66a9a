"""Benchmark: the flash sale on two web nodes of one shop, beside the same sale on one.

Usage: ``python bench/bench_two_nodes.py [--no-save]`` (``make bench`` runs it after
``bench_shop.py``). Two ``manage.py runshop`` on this machine, started at the same moment (the
start-up lock takes them in turn), on one PostgreSQL database and one Redis database:

- node A: ``STARMALL_ROLES=web,worker,beat`` on ``BENCH_TWO_NODES_PORT`` (8610);
- node B: ``STARMALL_ROLES=web`` on the next port (8611);

the WeChat sandbox on ``BENCH_TWO_NODES_SANDBOX_PORT`` (8612), started by this script (no node
has the ``sandbox`` role). Everything else is ``bench_shop.py``'s: the same 2,000 customers
(logged in through both nodes), 500 units, concurrency 64, confirm + create, the same audit
(exactly 500 orders, stock 0, one order per customer). First the sale through node A alone,
then a fresh SKU's sale with the 64 connections split 32/32 across A and B. Both nodes share a
machine here (2 cores): the two-node figure says the split is correct and what a second set of
web processes costs or gains on the same cores; on two machines each node has its own.

Uses its own database (``starmall_bench_two``) and Redis database (``BENCH_TWO_NODES_REDIS_DB``,
default 12), created/flushed at the start and dropped/flushed at the end, so it never meets a
``bench_shop.py`` run. Writes ``bench/results/<UTC time>-two-nodes.json``; exit 1 when a count
is wrong.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

PORT_A = int(os.environ.get("BENCH_TWO_NODES_PORT", "8610"))
PORT_B = PORT_A + 1
SANDBOX_PORT = int(os.environ.get("BENCH_TWO_NODES_SANDBOX_PORT", "8612"))
# bench_shop reads its ports and Redis database from the environment when imported.
os.environ["BENCH_WEB_PORT"] = str(PORT_A)
os.environ["BENCH_SANDBOX_PORT"] = str(SANDBOX_PORT)
os.environ["BENCH_REDIS_DB"] = os.environ.get("BENCH_TWO_NODES_REDIS_DB", "12")

import bench_shop as bs  # noqa: E402

bs.DB_NAME = "starmall_bench_two"
bs.DATABASE_URL = bs.DATABASE_URL.rsplit("/", 1)[0] + "/" + bs.DB_NAME
bs.VAR_DIR = bs.ROOT / "var" / "bench-two-nodes"
bs.SHOP_ENV["DATABASE_URL"] = bs.DATABASE_URL
bs.SHOP_ENV["STARMALL_VAR_DIR"] = str(bs.VAR_DIR / "a")
SPLIT = 0  # run_load's port meaning "alternate the connections between the two nodes"


class SplitClient(bs.Client):
    """``bench_shop.Client`` whose connections, opened with port :data:`SPLIT`, go to node A and
    node B in turn (32 of the 64 load threads each)."""

    _turn = itertools.count()

    def __init__(self, port: int) -> None:
        super().__init__((PORT_A, PORT_B)[next(self._turn) % 2] if port == SPLIT else port)


bs.Client = SplitClient


def start_node(procs: bs.Processes, name: str, port: int, roles: str):
    """``manage.py runshop`` of one node (its own var folder: supervisor config, static files)."""
    var = bs.VAR_DIR / name
    var.mkdir(parents=True, exist_ok=True)
    env = dict(bs.SHOP_ENV, STARMALL_ROLES=roles, STARMALL_VAR_DIR=str(var), WEB_BIND=f"127.0.0.1:{port}")
    saved, bs.SHOP_ENV = bs.SHOP_ENV, env  # Processes.start passes SHOP_ENV
    try:
        return procs.start(f"node-{name}", [sys.executable, "manage.py", "runshop", "--bind", f"127.0.0.1:{port}"])
    finally:
        bs.SHOP_ENV = saved


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-save", action="store_true", help="print, do not write bench/results/")
    args = parser.parse_args()
    bs.VAR_DIR.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    bs.pg_admin(f'DROP DATABASE IF EXISTS "{bs.DB_NAME}" WITH (FORCE)')
    bs.pg_admin(f'CREATE DATABASE "{bs.DB_NAME}"')
    bs.redis_flush()
    procs = bs.Processes()
    results: dict = {"runs": {}}
    failed = False
    try:
        sandbox = procs.start(
            "sandbox",
            [
                sys.executable,
                "-m",
                "wechat_sandbox",
                "--host",
                "127.0.0.1",
                "--port",
                str(SANDBOX_PORT),
                "--no-auto-notify",
                "--log-level",
                "WARNING",
            ],
        )
        bs.wait_http(SANDBOX_PORT, "/sandbox/health", sandbox)
        node_a = start_node(procs, "a", PORT_A, "web,worker,beat")
        node_b = start_node(procs, "b", PORT_B, "web")  # at the same moment: the start-up lock
        bs.wait_http(PORT_A, "/healthz", node_a, seconds=400)
        bs.wait_http(PORT_B, "/healthz", node_b, seconds=400)
        for key in (
            "DATABASE_URL",
            "REDIS_URL",
            "DJANGO_SETTINGS_MODULE",
            "STARMALL_VAR_DIR",
            "DJANGO_DEBUG",
            "WECHAT_API_BASE",
            "WECHAT_PAY_API_BASE",
        ):
            os.environ[key] = bs.SHOP_ENV[key]
        import django

        django.setup()
        results["machine"] = bs.machine()
        print(
            f"two nodes up after {time.monotonic() - started:.0f} s; load average {results['machine']['load_avg']}",
            flush=True,
        )
        customers = login_split()
        print(
            f"{len(customers)} customers logged in through both nodes after {time.monotonic() - started:.0f} s",
            flush=True,
        )
        for name, port in (("flash sale, one node (A)", PORT_A), ("flash sale, two nodes (A+B, 32+32)", SPLIT)):
            _, sku_id = bs.new_sku(f"秒杀 {name}", bs.UNITS)
            run = flash_sale_on(customers, sku_id, port)
            run["audit"] = bs.flash_audit(sku_id)
            run["load_avg_after"] = os.getloadavg()
            results["runs"][name] = run
            failed |= not run["audit"]["ok"]
        one, two = (results["runs"][n]["per_s"] for n in results["runs"])
        results["ratios"] = {"two nodes / one node (attempts per s)": f"{100 * two / one:.1f} %" if one else "-"}
        results["bench_seconds"] = round(time.monotonic() - started)
        print(bs.table(results))
        print(f"load average (1, 5, 15 min) before: {results['machine']['load_avg']}; after: {os.getloadavg()}")
        if not args.no_save:
            name = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-two-nodes.json"
            out = bs.ROOT / "bench" / "results" / name
            out.parent.mkdir(exist_ok=True)
            out.write_text(json.dumps(results, indent=2, ensure_ascii=False, default=str) + "\n")
            print(f"written: {out.relative_to(bs.ROOT)}")
    finally:
        procs.stop()
        from django.db import connections

        connections.close_all()
        bs.redis_flush()
        bs.pg_admin(f'DROP DATABASE IF EXISTS "{bs.DB_NAME}" WITH (FORCE)')
    if failed:
        print("FAILED: a count is wrong (see the audits above)")
    return 1 if failed else 0


def login_split() -> list[dict]:
    """bench_shop's customer set-up with its connections split across both nodes (a token from
    one node works on the other: both read Redis)."""
    original = bs.run_load

    def split(tasks, work, concurrency=bs.CONCURRENCY, port=bs.WEB_PORT):
        return original(tasks, work, concurrency, SPLIT)

    bs.run_load = split
    try:
        return bs.customers_login(bs.CUSTOMERS, prefix=f"two{os.getpid()}")
    finally:
        bs.run_load = original


def flash_sale_on(customers: list[dict], sku_id: int, port: int) -> dict:
    """bench_shop's flash sale (confirm + create, shuffled customers) sent to ``port``
    (:data:`SPLIT`: both nodes)."""
    original = bs.run_load

    def on_port(tasks, work, concurrency=bs.CONCURRENCY, port_=None):
        return original(tasks, work, concurrency, port)

    bs.run_load = on_port
    try:
        return bs.flash_sale(customers, sku_id)
    finally:
        bs.run_load = original


if __name__ == "__main__":
    sys.exit(main())
