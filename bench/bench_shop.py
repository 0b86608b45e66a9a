"""Benchmark: the running shop under a flash sale, a notification storm and browsing.

Usage: ``python bench/bench_shop.py [--only floor,flash,flash100x,sql,storm,storm_v3,browse] [--no-save]`` (``make bench``
runs it). It needs PostgreSQL and Redis: the server of ``DATABASE_URL`` (default
``postgres://postgres@127.0.0.1:5432/``) with its own database ``starmall_bench``, created
empty and dropped at the end, and the server of ``REDIS_URL`` (default
``redis://127.0.0.1:6379``) with its own database number ``BENCH_REDIS_DB`` (default 11,
flushed at start and end; never 0).

The shop is started exactly as ``make run`` starts it (``manage.py runshop``: gunicorn with
``starmall/gunicorn_conf.py`` + Celery worker and beat) on ``BENCH_WEB_PORT`` (8600), with
``DJANGO_DEBUG=false``, the WeChat sandbox on ``BENCH_SANDBOX_PORT`` (8601) and the login
throttle raised (2,000 logins from one address are the set-up, not the test). The load comes
from this separate process: threads, each with one keep-alive ``http.client`` connection
(docs/PERFORMANCE.md).

1. flash sale: 500 units, 2,000 customers logged in through the sandbox with an address
   before the clock starts, concurrency 64, confirm + create each, against a plain SKU (and a
   flash-sale activity when the shop has them); then the database must hold exactly 500
   orders, stock 0, one order per customer.
2. the limit: the same sale as one SQL statement per attempt (pgbench, same server, same
   concurrency, same run) and the ratio API / SQL; and the floor: the same statement in the
   smallest Django app (``bench/minimal_view.py``) on the same gunicorn configuration, run
   first, before the shop takes the port.
3. notification storm: 1,000 unpaid WeChat orders, each signed notification (the sandbox's
   signing code) delivered 3 times, shuffled, concurrency 64; every order paid exactly once
   and 1,000 follow-ups of each kind, all finished by the Celery worker.
4. browse: product list and detail.
5. ``flash100x`` (not in the default run): a 秒杀 of 200 units for 20,000 buyers (the 2,000
   logged in plus 18,000 written straight to the database with an address and a token),
   exactly 200 sold.
6. ``storm_v3`` (not in the default run): the storm under Pay API v3 — 1,000 orders whose
   payments were made under v3, each signed, AES-GCM encrypted ``TRANSACTION.SUCCESS``
   delivered 3 times to ``payments/wechat/v3/notify`` (the notify gate, as v2's);
   the same audit.

Prints a table, then the targets in one table (:data:`TARGETS`: the 秒杀 activity's and the plain
SKU's share of bare SQL and p99, the storm's p99, each met or not), and writes
``bench/results/<UTC time>.json`` (machine, versions, git sha, load, ``targets``).
Exit status 1 when a count is wrong.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import http.client
import json
import os
import platform
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONCURRENCY = 64
UNITS = 500
CUSTOMERS = 2000
DEMAND_UNITS, DEMAND_BUYERS = 200, 20000  # the 100x-demand sale (--only flash100x)
STORM_ORDERS = 1000
STORM_COPIES = 3
BROWSE_REQUESTS = 2000
DB_NAME = os.environ.get("BENCH_DB_NAME", "starmall_bench")  # another name lets two benches share a server
WEB_PORT = int(os.environ.get("BENCH_WEB_PORT", "8600"))
SANDBOX_PORT = int(os.environ.get("BENCH_SANDBOX_PORT", "8601"))
REDIS_DB = int(os.environ.get("BENCH_REDIS_DB", "11"))
if REDIS_DB == 0:
    sys.exit("BENCH_REDIS_DB must not be 0: the bench flushes its Redis database")

PG = urllib.parse.urlsplit(os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/")
if not PG.scheme.startswith("postgres"):
    sys.exit("bench_shop needs PostgreSQL: set DATABASE_URL=postgres://... (or leave it unset)")
DATABASE_URL = urllib.parse.urlunsplit((PG.scheme, PG.netloc, "/" + DB_NAME, "", ""))
_redis = urllib.parse.urlsplit(os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0")
REDIS_URL = urllib.parse.urlunsplit((_redis.scheme, _redis.netloc, f"/{REDIS_DB}", "", ""))
VAR_DIR = ROOT / "var" / "bench"
SHOP_ENV = {
    **os.environ,
    "DATABASE_URL": DATABASE_URL,
    "REDIS_URL": REDIS_URL,
    "DJANGO_SETTINGS_MODULE": "starmall.settings.local",
    "DJANGO_DEBUG": "false",
    "STARMALL_VAR_DIR": str(VAR_DIR),
    "SITE_URL": f"http://127.0.0.1:{WEB_PORT}",
    "WEB_BIND": f"127.0.0.1:{WEB_PORT}",
    "WECHAT_API_BASE": f"http://127.0.0.1:{SANDBOX_PORT}/",
    "WECHAT_PAY_API_BASE": f"http://127.0.0.1:{SANDBOX_PORT}/",
    "THROTTLE_LOGIN": "100000/min",
    "LOG_LEVEL": "WARNING",
    "PYTHONUNBUFFERED": "1",
}


# --- load: threads with one keep-alive connection each --------------------------------------


class Client:
    """One keep-alive HTTP/1.1 connection; JSON in and out."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def request(
        self,
        method: str,
        path: str,
        body=None,
        token: str | None = None,
        content_type: str = "application/json",
        headers: dict | None = None,
    ) -> tuple[int, bytes]:
        headers = {"Content-Type": content_type, **(headers or {})}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if body is not None and not isinstance(body, bytes):
            body = json.dumps(body).encode()
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, body=body, headers=headers)
                response = self.conn.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                # The server closed an idle keep-alive connection: open a new one, once.
                self.conn.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def json(self, method: str, path: str, body=None, token: str | None = None) -> tuple[int, dict]:
        status, raw = self.request(method, path, body, token)
        try:
            return status, json.loads(raw) if raw else {}
        except ValueError:
            return status, {"code": f"not-json: {raw[:80]!r}"}

    def close(self) -> None:
        self.conn.close()


def cpu_seconds() -> dict[int, tuple[str, float]]:
    """``{pid: (kind, CPU seconds used so far)}`` of every process on this machine (Linux /proc),
    kind: the web server, PostgreSQL, Redis, Celery, this benchmark's client, or other."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, tuple[str, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(entry) == os.getpid():
            kind = "bench client"
        elif "gunicorn" in cmd or "uvicorn" in cmd:
            kind = "web"
        elif cmd.startswith("postgres") or "postgres:" in cmd:
            kind = "postgres"
        elif "redis-server" in cmd:
            kind = "redis"
        elif "celery" in cmd:
            kind = "celery"
        else:
            kind = "other"
        out[int(entry)] = (kind, (int(fields[11]) + int(fields[12])) / tick)
    return out


def cpu_used(before: dict, after: dict) -> dict[str, float]:
    """CPU seconds by kind between two :func:`cpu_seconds` readings (processes that ended in
    between are not counted: PostgreSQL keeps its connections, the shop its workers)."""
    used: dict[str, float] = {}
    for pid, (kind, seconds) in after.items():
        used[kind] = used.get(kind, 0.0) + seconds - (before[pid][1] if pid in before else 0.0)
    return {kind: round(seconds, 2) for kind, seconds in sorted(used.items())}


def run_load(tasks: list, work, concurrency: int = CONCURRENCY, port: int = WEB_PORT) -> dict:
    """Run ``work(client, task) -> outcome`` over ``tasks`` from ``concurrency`` threads.

    The clock starts when every thread holds its connection (Barrier) and stops at the last
    answer. Returns wall seconds, per-task latencies (s), outcome counts and, per outcome, the
    second (from the start) its last answer came.
    """
    todo: queue.SimpleQueue = queue.SimpleQueue()
    for task in tasks:
        todo.put(task)
    latencies: list[float] = []
    by_outcome: dict[str, list[float]] = {}
    outcomes: dict[str, int] = {}
    last_at: dict[str, float] = {}
    lock = threading.Lock()
    barrier = threading.Barrier(concurrency + 1)

    def worker() -> None:
        client = Client(port)
        client.conn.connect()
        barrier.wait()
        mine, counts, ends, by = [], {}, {}, {}
        while True:
            try:
                task = todo.get_nowait()
            except queue.Empty:
                break
            t0 = time.perf_counter()
            try:
                outcome = work(client, task)
            except Exception as exc:  # a failed request is an outcome to count, not a crash
                outcome = f"error {type(exc).__name__}"
                client.close()
            mine.append(time.perf_counter() - t0)
            by.setdefault(outcome, []).append(mine[-1])
            counts[outcome] = counts.get(outcome, 0) + 1
            ends[outcome] = time.perf_counter()
        client.close()
        with lock:
            latencies.extend(mine)
            for key, values in by.items():
                by_outcome.setdefault(key, []).extend(values)
            for key, n in counts.items():
                outcomes[key] = outcomes.get(key, 0) + n
                last_at[key] = max(last_at.get(key, 0.0), ends[key])

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    # This client's own garbage collector off while it measures: a full collection of this
    # process (Django loaded, 20,000 buyers in memory) stopped all 64 threads for 40-100 ms in
    # the middle of a storm (gc.callbacks), and counted as the shop's latency.
    gc.collect()
    gc.freeze()
    gc.disable()
    barrier.wait()
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    try:
        for thread in threads:
            thread.join()
    finally:
        gc.enable()
        gc.unfreeze()
    wall = time.perf_counter() - t0
    cpu1 = cpu_seconds()
    return {
        "wall": wall,
        "latencies": latencies,
        "outcomes": outcomes,
        "last_at_s": {key: round(at - t0, 2) for key, at in sorted(last_at.items())},
        "by_outcome": by_outcome,
        "cpu_s": cpu_used(cpu0, cpu1),
    }


def stats(result: dict) -> dict:
    seconds = sorted(result["latencies"])
    by_outcome = {key: sorted(values) for key, values in sorted(result.get("by_outcome", {}).items())}
    return {
        "n": len(seconds),
        "per_s": round(len(seconds) / result["wall"], 1) if result["wall"] else 0,
        "p50_ms": _pct(seconds, 0.50),
        "p95_ms": _pct(seconds, 0.95),
        "p99_ms": _pct(seconds, 0.99),
        "wall_s": round(result["wall"], 2),
        "outcomes": dict(sorted(result["outcomes"].items())),
        "last_at_s": result.get("last_at_s", {}),
        "cpu_s_by_process": result.get("cpu_s", {}),
        "p50_p99_ms_by_outcome": {key: [_pct(v, 0.50), _pct(v, 0.99)] for key, v in by_outcome.items()},
    }


def _pct(seconds: list[float], p: float) -> float:
    """The ``p`` percentile of ``seconds`` (sorted), in milliseconds to 0.1; 0.0 when empty."""
    return round(seconds[min(len(seconds) - 1, int(len(seconds) * p))] * 1000, 1) if seconds else 0.0


# --- processes -------------------------------------------------------------------------------


class Processes:
    """The sandbox and ``runshop`` (its own process group), stopped at the end whatever happens."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def start(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(VAR_DIR / f"{name}.log", "wb")
        proc = subprocess.Popen(
            argv, cwd=ROOT, env=SHOP_ENV, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.procs.append(proc)
        return proc

    def stop_one(self, proc: subprocess.Popen) -> None:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
        self.procs.remove(proc)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def wait_http(port: int, path: str, proc: subprocess.Popen, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"process for port {port} exited ({proc.returncode}); see {VAR_DIR}/*.log")
        try:
            client = Client(port)
            status, _ = client.request("GET", path)
            client.close()
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"nothing answered on port {port}{path} within {seconds} s")


def pg_admin(sql: str) -> None:
    import psycopg

    dsn = urllib.parse.urlunsplit((PG.scheme, PG.netloc, "/postgres", "", ""))
    with psycopg.connect(dsn.replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute(sql)


def redis_flush() -> None:
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()


# --- set-up (before any clock) -------------------------------------------------------------


def customers_login(n: int, prefix: str) -> list[dict]:
    """Log ``n`` customers in through the sandbox (wx.login code -> token) and give each an
    address through the API, 64 at a time. Returns ``[{"token", "address_id", "openid"}]``."""
    out: list[dict] = []
    lock = threading.Lock()

    def one(client: Client, i: int) -> str:
        openid = f"oBench{prefix}{i:08d}"
        sandbox = Client(SANDBOX_PORT)
        _, code = sandbox.json("POST", "/sandbox/login-codes", {"openid": openid})
        sandbox.close()
        status, login = client.json("POST", "/api/v1/auth/wechat/login", {"code": code["code"]})
        if status != 200:
            return f"login {status} {login.get('code')}"
        token = login["token"]
        status, address = client.json(
            "POST",
            "/api/v1/addresses",
            {
                "name": f"买家{i}",
                "phone": "13800000000",
                "province": "广东省",
                "city": "深圳市",
                "district": "南山区",
                "detail": f"科技园 {i} 号",
                "is_default": True,
            },
            token,
        )
        if status != 201:
            return f"address {status} {address.get('code')}"
        with lock:
            out.append({"token": token, "address_id": address["id"], "openid": openid})
        return "ok"

    result = run_load(list(range(n)), one)
    if result["outcomes"] != {"ok": n}:
        raise SystemExit(f"customer set-up failed: {result['outcomes']}")
    return out


def customers_direct(n: int, prefix: str) -> list[dict]:
    """``n`` more customers for the 100x-demand sale, written straight to the database with a
    default address and an API token in Redis (set-up, not measured: 18,000 sandbox logins
    would take minutes). The address card the shop writes after an address is saved is
    written too, when the shop has one (``apps.accounts.address_cards``)."""
    from apps.accounts.models import Address, Customer
    from apps.accounts.tokens import token_issue

    try:
        from apps.accounts import address_cards
    except ImportError:
        address_cards = None
    customers = Customer.objects.bulk_create(
        [Customer(openid=f"oBulk{prefix}{i:08d}", nickname=f"买家{i}") for i in range(n)], batch_size=2000
    )
    addresses = Address.objects.bulk_create(
        [
            Address(
                customer=c,
                name=f"买家{i}",
                phone="13800000000",
                province="广东省",
                city="深圳市",
                district="南山区",
                detail=f"科技园 {i} 号",
                is_default=True,
            )
            for i, c in enumerate(customers)
        ],
        batch_size=2000,
    )
    out = []
    for customer, address in zip(customers, addresses, strict=True):
        if address_cards is not None:
            address_cards.card_refresh(customer.pk)
        out.append({"token": token_issue(customer_id=customer.pk), "address_id": address.pk, "openid": customer.openid})
    return out


def new_sku(name: str, stock: int, price_fen: int = 990) -> tuple[int, int]:
    """A goods product with one SKU of ``stock`` units; returns (product_id, sku_id)."""
    from apps.catalog.models import Category, Product, Sku

    category, _ = Category.objects.get_or_create(name="bench")
    product = Product.objects.create(category=category, name=name)
    sku = Sku.objects.create(product=product, price_fen=price_fen, stock=stock, specs={"规格": "秒杀"})
    return product.pk, sku.pk


# --- 1. flash sale ---------------------------------------------------------------------------


def flash_sale(customers: list[dict], sku_id: int, extra: dict | None = None) -> dict:
    """2,000 confirm + create attempts for one SKU; outcome per attempt."""
    extra = extra or {}
    steps: dict[str, list[float]] = {"confirm": [], "create": []}  # a winner's two requests, seconds

    def attempt(client: Client, customer: dict) -> str:
        body = {"items": [{"sku_id": sku_id, "quantity": 1}], "address_id": customer["address_id"], **extra}
        t0 = time.perf_counter()
        status, draft = client.json("POST", "/api/v1/orders/confirm", body, customer["token"])
        if status != 200:
            return f"confirm {status} {draft.get('code')}"
        t1 = time.perf_counter()
        status, order = client.json("POST", "/api/v1/orders", {"order_key": draft["order_key"]}, customer["token"])
        if status == 201:
            steps["confirm"].append(t1 - t0)  # list.append is atomic: no lock needed
            steps["create"].append(time.perf_counter() - t1)
            return "won (201)"
        return f"create {status} {order.get('code')}"

    shuffled = customers[:]
    random.shuffle(shuffled)
    run = stats(run_load(shuffled, attempt))
    run["winner_p50_p99_ms"] = {name: [_pct(sorted(v), 0.50), _pct(sorted(v), 0.99)] for name, v in steps.items()}
    return run


def flash_audit(sku_id: int, flash_sale_id: int | None = None, units: int = UNITS) -> dict:
    """The database after the sale: orders, units, stock, customers with more than one order."""
    from django.db.models import Count, Sum

    from apps.catalog.models import Sku
    from apps.orders.models import OrderLine

    lines = OrderLine.objects.filter(sku_id=sku_id)
    audit = {
        "orders": lines.values("order_id").distinct().count(),
        "units": lines.aggregate(n=Sum("quantity"))["n"] or 0,
        "stock_left": Sku.objects.get(pk=sku_id).stock,
        "customers_with_2_orders": lines.values("order__customer_id")
        .annotate(n=Count("order_id"))
        .filter(n__gt=1)
        .count(),
    }
    expected = {"orders": units, "units": units, "stock_left": 0, "customers_with_2_orders": 0}
    if flash_sale_id is not None:  # the SKU held 1,000: the sale's quota is what sells out
        from apps.marketing.models import FlashSale

        sale = FlashSale.objects.get(pk=flash_sale_id)
        audit.update(flash_stock_left=sale.stock, flash_sold=sale.sold)
        expected.update(stock_left=units, flash_stock_left=0, flash_sold=units)
    audit["ok"] = all(audit[k] == v for k, v in expected.items())
    return audit


# --- 2. the limit: bare SQL ------------------------------------------------------------------

SQL_SETUP = """
DROP TABLE IF EXISTS bench_sql_order, bench_sql_sku;
CREATE TABLE bench_sql_sku (id int PRIMARY KEY, stock int NOT NULL CHECK (stock >= 0));
CREATE TABLE bench_sql_order (id bigserial PRIMARY KEY, sku_id int NOT NULL REFERENCES bench_sql_sku,
                              customer int NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
INSERT INTO bench_sql_sku VALUES (1, {units});
"""
SQL_ATTEMPT = """\\set customer random(1, {customers})
WITH u AS (UPDATE bench_sql_sku SET stock = stock - 1 WHERE id = 1 AND stock >= 1 RETURNING id)
INSERT INTO bench_sql_order (sku_id, customer) SELECT id, :customer FROM u;
"""


def bare_sql() -> dict:
    """The same sale as one statement per attempt: pgbench -c 64, 2,048 attempts (32 each)."""
    import psycopg

    with psycopg.connect(DATABASE_URL.replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute(SQL_SETUP.format(units=UNITS))
    pgbench = shutil.which("pgbench")
    if pgbench is None:
        return {"skipped": "pgbench not installed (postgresql-client)"}
    per_client = -(-CUSTOMERS // CONCURRENCY)
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as script:
        script.write(SQL_ATTEMPT.format(customers=CUSTOMERS))
    env = dict(
        os.environ,
        PGHOST=PG.hostname or "127.0.0.1",
        PGPORT=str(PG.port or 5432),
        PGUSER=urllib.parse.unquote(PG.username or "postgres"),
        PGDATABASE=DB_NAME,
    )
    if PG.password:
        env["PGPASSWORD"] = urllib.parse.unquote(PG.password)
    out = subprocess.run(
        [pgbench, "-n", "-c", str(CONCURRENCY), "-j", "2", "-t", str(per_client), "-f", script.name],
        env=env,
        capture_output=True,
        text=True,
    )
    os.unlink(script.name)
    if out.returncode != 0:
        return {"error": out.stderr[-500:]}
    tps = float(re.search(r"tps = ([\d.]+) \(without initial connection time\)", out.stdout).group(1))
    latency = float(re.search(r"latency average = ([\d.]+) ms", out.stdout).group(1))
    with psycopg.connect(DATABASE_URL.replace("postgres://", "postgresql://", 1)) as conn:
        orders = conn.execute("SELECT count(*) FROM bench_sql_order").fetchone()[0]
        stock = conn.execute("SELECT stock FROM bench_sql_sku").fetchone()[0]
    return {
        "n": per_client * CONCURRENCY,
        "per_s": round(tps, 1),
        "mean_ms": latency,
        "orders": orders,
        "stock_left": stock,
        "ok": orders == UNITS and stock == 0,
    }


def floor(procs: Processes) -> dict:
    """The same sale through the smallest Django app (bench/minimal_view.py) on the same
    gunicorn configuration: what Django's request cycle allows here (docs/PERFORMANCE.md)."""
    import psycopg

    with psycopg.connect(DATABASE_URL.replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute(SQL_SETUP.format(units=UNITS))
    SHOP_ENV["MINIMAL_DATABASE_URL"] = DATABASE_URL
    server = procs.start(
        "minimal",
        [
            sys.executable,
            "-m",
            "gunicorn",
            "-c",
            str(ROOT / "starmall" / "gunicorn_conf.py"),
            "bench.minimal_view:application",
            "--bind",
            f"127.0.0.1:{WEB_PORT}",
        ],
    )
    try:
        wait_http(WEB_PORT, "/health", server)

        def attempt(client: Client, customer: int) -> str:
            status, _ = client.request("POST", "/buy", {"customer": customer})
            return {201: "won (201)", 409: "sold out (409)"}.get(status, f"error {status}")

        run = stats(run_load(list(range(CUSTOMERS)), attempt))
    finally:
        procs.stop_one(server)
    with psycopg.connect(DATABASE_URL.replace("postgres://", "postgresql://", 1)) as conn:
        orders = conn.execute("SELECT count(*) FROM bench_sql_order").fetchone()[0]
        stock = conn.execute("SELECT stock FROM bench_sql_sku").fetchone()[0]
    run["audit"] = {"orders": orders, "stock_left": stock, "ok": orders == UNITS and stock == 0}
    return run


# --- 3. notification storm -------------------------------------------------------------------


def storm_orders(customer: dict, n: int, api: str = "v2") -> list:
    """``n`` unpaid goods orders of one customer, each with a pending WeChat payment made under
    Pay API ``api`` (made directly in the database: set-up, not measured). Returns their signed
    "paid" notifications (v2: XML bodies; v3: ``(body, headers)`` pairs)."""
    from django.utils import timezone

    from apps.accounts.models import Customer
    from apps.orders.models import Order, OrderEvent, OrderLine, OrderStatus
    from apps.payments.models import Payment
    from apps.printing.models import Printer
    from apps.printing.selectors import PRINT_ON_PAYMENT_SECONDS
    from bench.notices import paid_notices, paid_notices_v3

    # The demo's receipt printer would print 1,000 tickets in two minutes (a printer prints about
    # one a second): not a shop's storm. Switched off, the follow-ups are the three of a payment;
    # the shop's processes see it within PRINT_ON_PAYMENT_SECONDS (waited for below).
    switched_off = time.monotonic()
    Printer.objects.update(print_on_payment=False)
    product_id, sku_id = new_sku(f"storm {api}", stock=0, price_fen=12800)
    owner = Customer.objects.get(openid=customer["openid"])
    now = timezone.now()
    stamp = timezone.localtime(now).strftime("%Y%m%d%H%M%S")
    orders = Order.objects.bulk_create(
        [
            Order(
                order_no=f"{stamp}{9 if api == 'v2' else 8}{i:07d}",
                order_key=f"bench-storm-{api}-{stamp}-{i}",
                customer=owner,
                kind="goods",
                goods_fen=12800,
                pay_fen=12800,
                status=OrderStatus.UNPAID,
                address={"name": "storm"},
                pay_deadline=now + dt.timedelta(hours=2),
            )
            for i in range(n)
        ]
    )
    OrderLine.objects.bulk_create(
        [
            OrderLine(
                order=o,
                sku_id=sku_id,
                product_id=product_id,
                name="storm",
                specs={},
                price_fen=12800,
                quantity=1,
                amount_fen=12800,
            )
            for o in orders
        ]
    )
    OrderEvent.objects.bulk_create(
        [OrderEvent(order=o, to_status=OrderStatus.UNPAID, actor="customer", note="created") for o in orders]
    )
    Payment.objects.bulk_create(
        [Payment(order=o, method="wechat", out_trade_no=o.order_no, total_fee=o.pay_fen, api=api) for o in orders]
    )
    notices = (paid_notices_v3 if api == "v3" else paid_notices)(orders, stamp=stamp)
    time.sleep(max(0.0, switched_off + PRINT_ON_PAYMENT_SECONDS + 1 - time.monotonic()))
    return notices


def storm(notices: list[bytes]) -> dict:
    """Each notice :data:`STORM_COPIES` times, shuffled; outcomes ``SUCCESS first`` (the earliest
    of its copies in the shuffled order: the one the shop most likely stores and queues) and
    ``SUCCESS copy``, each with its own p50/p99."""
    deliveries = [body for body in notices for _ in range(STORM_COPIES)]
    random.shuffle(deliveries)
    seen: set[bytes] = set()
    tasks = []
    for body in deliveries:
        tasks.append((body, "first" if body not in seen else "copy"))
        seen.add(body)

    def deliver(client: Client, task: tuple[bytes, str]) -> str:
        body, kind = task
        status, raw = client.request("POST", "/api/v1/payments/wechat/notify", body, content_type="text/xml")
        return f"SUCCESS {kind}" if status == 200 and b"SUCCESS" in raw else f"{status} {raw[:60]!r}"

    return stats(run_load(tasks, deliver))


def storm_v3(notices: list[tuple[bytes, dict]]) -> dict:
    """The Pay API v3 storm: each signed, encrypted notice :data:`STORM_COPIES` times, shuffled,
    to ``payments/wechat/v3/notify`` (the notify gate: copies from Redis, first deliveries queued); outcomes
    ``204 first`` / ``204 copy``."""
    deliveries = [note for note in notices for _ in range(STORM_COPIES)]
    random.shuffle(deliveries)
    seen: set[bytes] = set()
    tasks = []
    for body, headers in deliveries:
        tasks.append((body, headers, "first" if body not in seen else "copy"))
        seen.add(body)

    def deliver(client: Client, task: tuple[bytes, dict, str]) -> str:
        body, headers, kind = task
        status, raw = client.request("POST", "/api/v1/payments/wechat/v3/notify", body, headers=headers)
        return f"204 {kind}" if status == 204 else f"{status} {raw[:60]!r}"

    return stats(run_load(tasks, deliver))


def storm_audit(order_nos: list[str], wait_seconds: float = 120) -> dict:
    """Every order paid once, one payment paid each, 1,000 follow-ups per kind, all done."""
    from django.db.models import Count

    from apps.orders.models import FollowUp, Order, OrderEvent, OrderStatus
    from apps.payments.models import Payment, QueuedNotification

    orders = Order.objects.filter(order_no__in=order_nos)
    # A first delivery the gate queued is applied by the worker after WeChat heard SUCCESS
    # (apps/payments/notify_queue.py): how long after the storm's last answer every order was paid.
    t0 = time.monotonic()
    deadline = t0 + wait_seconds
    while orders.filter(status=OrderStatus.PAID).count() < len(order_nos) and time.monotonic() < deadline:
        time.sleep(0.2)
    paid_after_s = round(time.monotonic() - t0, 1)
    audit = {
        "orders_paid": orders.filter(status=OrderStatus.PAID).count(),
        "payments_paid": Payment.objects.filter(out_trade_no__in=order_nos, status="paid").count(),
        "paid_events": OrderEvent.objects.filter(order__in=orders, to_status=OrderStatus.PAID).count(),
        "followups": dict(FollowUp.objects.filter(order__in=orders).values_list("kind").annotate(n=Count("id"))),
        "all_paid_after_s": paid_after_s,
    }
    followups = FollowUp.objects.filter(order__in=orders)
    while followups.exclude(status=FollowUp.Status.DONE).exists() and time.monotonic() < deadline:
        time.sleep(1)
    audit["followups_done"] = followups.filter(status=FollowUp.Status.DONE).count()
    audit["followups_drained_s"] = round(time.monotonic() - t0, 1)
    audit["queued_left"] = QueuedNotification.objects.filter(out_trade_no__in=order_nos).count()
    n = len(order_nos)
    audit["ok"] = (
        audit["orders_paid"] == n
        and audit["payments_paid"] == n
        and audit["paid_events"] == n
        and len(audit["followups"]) >= 1
        and all(v == n for v in audit["followups"].values())
        and audit["followups_done"] == n * len(audit["followups"])
        and audit["queued_left"] == 0
    )
    return audit


# --- 4. browse -------------------------------------------------------------------------------


def browse() -> dict:
    from apps.catalog.models import Product

    ids = list(
        Product.objects.filter(is_active=True, category__name__in=["bench"])
        .exclude(name__in=["bench"])
        .values_list("pk", flat=True)[:1]
    ) + list(Product.objects.filter(is_active=True).exclude(category__name="bench").values_list("pk", flat=True))
    paths = [
        ("/api/v1/products" if i % 2 == 0 else f"/api/v1/products/{ids[i % len(ids)]}") for i in range(BROWSE_REQUESTS)
    ]

    def get(client: Client, path: str) -> str:
        status, _ = client.request("GET", path)
        return f"{'list' if path.endswith('products') else 'detail'} {status}"

    return stats(run_load(paths, get))


# --- report ----------------------------------------------------------------------------------


def machine() -> dict:
    import django
    import psycopg

    mem = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal"):
                mem = int(line.split()[1]) // 1024
    sha = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    with psycopg.connect(DATABASE_URL.replace("postgres://", "postgresql://", 1)) as conn:
        pg_version = conn.execute("SHOW server_version").fetchone()[0]
    import redis

    conf = {}
    exec((ROOT / "starmall" / "gunicorn_conf.py").read_text(), {"os": os, "__name__": "conf"}, conf)
    return {
        "timestamp": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "git_sha": sha + ("+dirty" if dirty else ""),
        "cores": os.cpu_count(),
        "memory_mb": mem,
        "load_avg": os.getloadavg(),
        "python": platform.python_version(),
        "django": django.__version__,
        "postgresql": pg_version,
        "redis": redis.Redis.from_url(REDIS_URL).info()["redis_version"],
        "gunicorn": {k: conf.get(k) for k in ("worker_class", "workers", "threads", "keepalive", "accesslog")},
    }


def table(results: dict) -> str:
    rows = [("benchmark", "n", "per s", "p50 ms", "p95 ms", "p99 ms", "checks")]
    for name, r in results["runs"].items():
        if "per_s" not in r:
            rows.append((name, "-", "-", "-", "-", "-", str(r)))
            continue
        check = r.get("audit", {}).get("ok", r.get("ok", ""))
        rows.append(
            (
                name,
                str(r["n"]),
                f"{r['per_s']:.0f}",
                str(r.get("p50_ms", "-")),
                str(r.get("p95_ms", "-")),
                str(r.get("p99_ms", r.get("mean_ms", "-"))),
                "ok" if check is True else str(check),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) for row in rows]
    for name, r in results["runs"].items():
        if r.get("outcomes"):
            lines.append(
                f"{name} outcomes: {r['outcomes']}; last of each at (s): {r.get('last_at_s')}; "
                f"p50/p99 ms of each: {r.get('p50_p99_ms_by_outcome')}"
                + (
                    f"; a winner's confirm / create p50/p99 ms: {r['winner_p50_p99_ms']}"
                    if "winner_p50_p99_ms" in r
                    else ""
                )
                + f"; CPU s by process: {r.get('cpu_s_by_process')}"
            )
        if r.get("audit"):
            lines.append(f"{name} audit: {r['audit']}")
    for name, ratio in results.get("ratios", {}).items():
        lines.append(f"{name}: {ratio}")
    return "\n".join(lines)


#: The targets the lead checks after ``make bench`` (docs/PERFORMANCE.md): run name, share of
#: bare SQL's rate at least (None: no ratio), p99 below (ms).
TARGETS = (
    ("flash sale, activity (confirm+create)", "秒杀 activity", 40.0, 250),
    ("flash sale, plain SKU (confirm+create)", "plain SKU rush", 20.0, 500),
    ("notification storm (1,000 x 3)", "notification storm", None, 100),
)


def targets(results: dict) -> list[dict]:
    """Each target's run measured against it: ``{what, ratio_pct, p99_ms, target, met}``
    (ratio against the same run's bare SQL; None when that part did not run)."""
    runs = results["runs"]
    sql = runs.get("bare SQL limit (pgbench)", {}).get("per_s")
    rows = []
    for name, what, min_pct, max_p99 in TARGETS:
        run = runs.get(name)
        if not run or "per_s" not in run:
            continue
        ratio = round(100 * run["per_s"] / sql, 1) if sql and min_pct is not None else None
        met = run["p99_ms"] < max_p99 and (min_pct is None or (ratio is not None and ratio >= min_pct))
        goal = (f">= {min_pct:.0f} % of bare SQL, " if min_pct is not None else "") + f"p99 < {max_p99} ms"
        rows.append({"what": what, "ratio_pct": ratio, "p99_ms": run["p99_ms"], "target": goal, "met": met})
    return rows


def targets_table(rows: list[dict]) -> str:
    """The targets as one table: what, its share of bare SQL, p99, the target, met or not."""
    cells = [("target run", "/ bare SQL", "p99 ms", "target", "met")] + [
        (
            r["what"],
            "-" if r["ratio_pct"] is None else f"{r['ratio_pct']:.1f} %",
            f"{r['p99_ms']:.0f}",
            r["target"],
            "yes" if r["met"] else "NO",
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="floor,flash,flash100x,sql,storm,browse")
    parser.add_argument("--no-save", action="store_true", help="print, do not write bench/results/")
    parser.add_argument("--keep", action="store_true", help="leave the shop running (debugging)")
    args = parser.parse_args()
    only = set(args.only.split(","))
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    pg_admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
    pg_admin(f'CREATE DATABASE "{DB_NAME}"')
    redis_flush()
    procs = Processes()
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
        wait_http(SANDBOX_PORT, "/sandbox/health", sandbox)
        if "floor" in only:  # before the shop takes the port
            results["runs"]["floor: minimal Django view, same SQL"] = floor(procs)
            failed |= not results["runs"]["floor: minimal Django view, same SQL"]["audit"]["ok"]
        shop = procs.start("shop", [sys.executable, "manage.py", "runshop", "--bind", f"127.0.0.1:{WEB_PORT}"])
        wait_http(WEB_PORT, "/healthz", shop)
        for key in (
            "DATABASE_URL",
            "REDIS_URL",
            "DJANGO_SETTINGS_MODULE",
            "STARMALL_VAR_DIR",
            "DJANGO_DEBUG",
            "WECHAT_API_BASE",
            "WECHAT_PAY_API_BASE",
        ):
            os.environ[key] = SHOP_ENV[key]
        import django

        django.setup()
        results["machine"] = machine()
        print(
            f"shop up after {time.monotonic() - started:.0f} s; load average {results['machine']['load_avg']}",
            flush=True,
        )
        customers = customers_login(CUSTOMERS if only & {"flash", "flash100x"} else 1, prefix=str(os.getpid()))
        print(
            f"{len(customers)} customers logged in with addresses after {time.monotonic() - started:.0f} s", flush=True
        )
        if "flash" in only:
            _, sku_id = new_sku("秒杀 plain SKU", UNITS)
            run = flash_sale(customers, sku_id)
            run["audit"] = flash_audit(sku_id)
            results["runs"]["flash sale, plain SKU (confirm+create)"] = run
            failed |= not run["audit"]["ok"]
            flash = flash_sale_activity()
            if flash is not None:
                sale_id, sku_id = flash
                run = flash_sale(customers, sku_id, {"flash_sale_id": sale_id})
                run["audit"] = flash_audit(sku_id, sale_id)
                results["runs"]["flash sale, activity (confirm+create)"] = run
                failed |= not run["audit"]["ok"]
        if "flash100x" in only:  # the realistic shape: demand 100 times the supply
            crowd = customers + customers_direct(DEMAND_BUYERS - len(customers), prefix=str(os.getpid()))
            flash = flash_sale_activity(DEMAND_UNITS)
            if flash is not None:
                sale_id, sku_id = flash
                run = flash_sale(crowd, sku_id, {"flash_sale_id": sale_id})
                run["audit"] = flash_audit(sku_id, sale_id, units=DEMAND_UNITS)
                results["runs"]["flash sale, 100x demand (200 units, 20,000 buyers)"] = run
                failed |= not run["audit"]["ok"]
        if "sql" in only:
            sql = bare_sql()
            results["runs"]["bare SQL limit (pgbench)"] = sql
            failed |= not sql.get("ok", False)
            if sql.get("per_s"):
                results["ratios"] = {
                    f"{name} / bare SQL": f"{100 * r['per_s'] / sql['per_s']:.1f} %"
                    for name, r in results["runs"].items()
                    if name.startswith(("flash", "floor")) and r.get("per_s")
                }
                base = results["runs"].get("floor: minimal Django view, same SQL", {}).get("per_s")
                for name, r in list(results["runs"].items()):
                    if base and name.startswith("flash") and r.get("per_s"):
                        results["ratios"][f"{name} / floor"] = f"{100 * r['per_s'] / base:.1f} %"
        if "storm" in only:
            notices = storm_orders(customers[0], STORM_ORDERS)
            order_nos = [re.search(rb"<out_trade_no>(?:<!\[CDATA\[)?(\w+)", n).group(1).decode() for n in notices]
            run = storm(notices)
            run["audit"] = storm_audit(order_nos)
            results["runs"]["notification storm (1,000 x 3)"] = run
            failed |= not run["audit"]["ok"] or not set(run["outcomes"]) <= {"SUCCESS first", "SUCCESS copy"}
        if "storm_v3" in only:  # signed now: delivered within WeChat's 5-minute window
            notices = storm_orders(customers[0], STORM_ORDERS, api="v3")
            from apps.payments.models import Payment

            order_nos = list(Payment.objects.filter(api="v3").values_list("out_trade_no", flat=True))
            run = storm_v3(notices)
            run["audit"] = storm_audit(order_nos)
            results["runs"]["notification storm, Pay API v3 (1,000 x 3)"] = run
            failed |= not run["audit"]["ok"] or not set(run["outcomes"]) <= {"204 first", "204 copy"}
        if "browse" in only:
            results["runs"]["browse (product list + detail)"] = browse()
        results["bench_seconds"] = round(time.monotonic() - started)
        print(table(results))
        results["targets"] = targets(results)
        if results["targets"]:
            print(targets_table(results["targets"]))
        if not args.no_save:
            name = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + ".json"
            out = ROOT / "bench" / "results" / name
            out.parent.mkdir(exist_ok=True)
            out.write_text(json.dumps(results, indent=2, ensure_ascii=False, default=str) + "\n")
            print(f"written: {out.relative_to(ROOT)}")
        if args.keep:
            input("shop still running; Enter stops it")
    finally:
        procs.stop()
        from django.db import connections

        connections.close_all()
        redis_flush()
        pg_admin(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
    if failed:
        print("FAILED: a count is wrong (see the audits above)")
    return 1 if failed else 0


def flash_sale_activity(units: int = UNITS) -> tuple[int, int] | None:
    """A live 秒杀 of 500 units (limit 1 per customer) on a fresh SKU of 1,000 units, when the
    shop has flash sales (apps.marketing); returns (flash_sale_id, sku_id)."""
    try:
        from apps.marketing import flash_sales
    except ImportError:
        return None
    from django.utils import timezone

    _, sku_id = new_sku("秒杀 activity SKU", 2 * units, price_fen=1990)
    now = timezone.now()
    sale = flash_sales.flash_sale_schedule(
        title="bench 秒杀",
        sku_id=sku_id,
        price_fen=990,
        stock=units,
        starts_at=now - dt.timedelta(minutes=1),
        ends_at=now + dt.timedelta(hours=1),
        limit_per_customer=1,
    )
    return sale.pk, sku_id


if __name__ == "__main__":
    sys.exit(main())
