"""A shop with a million orders: realistic bulk data for the volume benchmark (``seed_volume``).

One run adds ``customers`` customers and ``orders`` orders spread over the last 365 Shanghai days
(daytime-heavy), in every status, with every row their flows write (``volume_orders``) and
distributors; a share of the paid orders are consultations on the run's own teachers
(``volume_bookings``). Rows are written in batches (``volume_writer``: COPY and INSERT ... SELECT on
PostgreSQL). Every unique key carries the run's number (orders ``V<run:03><n:09>``, customers
``vol-<run>-<n>``), one more than the last run's: running it again adds a second, disjoint set.
Balances, points and distributor totals are set from their ledger rows at the end, so the ledger sums hold.
"""

from __future__ import annotations

import datetime as dt
import random
import time
from bisect import bisect
from collections import Counter
from dataclasses import dataclass, field
from itertools import accumulate
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import connection, transaction
from django.db.models import OuterRef, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from apps.accounts.models import Customer, WalletEvent
from apps.backoffice import day_figures, volume_bookings
from apps.backoffice.volume_orders import VolumeOrder, write_batch
from apps.backoffice.volume_writer import copy_rows, reserve_ids
from apps.catalog.models import Category, Kind, Product, Sku
from apps.distribution.models import Distributor, LedgerEntry
from apps.orders.models import Order, OrderStatus, PayMethod

SHANGHAI = ZoneInfo("Asia/Shanghai")
# Shares of the statuses (per mille) of the orders that are not unpaid.
STATUS_SHARES = {
    OrderStatus.COMPLETED: 560,
    OrderStatus.SHIPPED: 120,
    OrderStatus.PAID: 100,
    OrderStatus.CANCELLED: 140,
    OrderStatus.REFUNDED: 50,
    OrderStatus.REFUNDING: 10,
}
UNPAID_EVERY = 2000  # one order in this many is unpaid: the last day's, most of them past their deadline
HOUR_WEIGHTS = [1, 1, 1, 1, 1, 1, 2, 3, 5, 7, 8, 9, 10, 9, 8, 8, 8, 9, 10, 12, 13, 12, 8, 4]
SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗"
GIVEN = "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚桂英华玉兰"
CITIES = [
    ("上海市", "上海市", "浦东新区"),
    ("广东省", "深圳市", "南山区"),
    ("浙江省", "杭州市", "西湖区"),
    ("北京市", "北京市", "朝阳区"),
]
CARRIERS = [("shunfeng", "顺丰速运"), ("zhongtong", "中通快递"), ("yuantong", "圆通速递")]
BATCH = 20_000


@dataclass
class Run:
    """One seeding run's fixed parts: its number, clock, catalog, customers and distributors."""

    number: int
    now: dt.datetime
    rng: random.Random
    midnight: dt.datetime  # today's Shanghai midnight
    skus: list[Sku] = field(default_factory=list)
    customers: list[int] = field(default_factory=list)
    referrer: dict[int, int] = field(default_factory=dict)  # customer id -> distributor id
    teachers: list[tuple[int, Sku]] = field(default_factory=list)  # (teacher id, its service's SKU)
    cells: list[tuple[int, dt.date, int]] = field(default_factory=list)  # free (teacher index, day, hour)
    counts: Counter = field(default_factory=Counter)


def next_run_number() -> int:
    """1 + the run number in the newest seeded customer's openid (1 for the first run)."""
    last = Customer.objects.filter(openid__startswith="vol-").order_by("-id").values_list("openid", flat=True)[:1]
    return int(last[0].split("-")[1]) + 1 if last else 1


def _any(rng: random.Random, items):
    """One of ``items`` (``rng.choice`` without its rejection sampling: a fifth of the cost)."""
    return items[int(rng.random() * len(items))]


def _name(rng: random.Random) -> str:
    given = _any(rng, GIVEN) if rng.random() < 0.5 else _any(rng, GIVEN) + _any(rng, GIVEN)
    return _any(rng, SURNAMES) + given


def _catalog(run: Run) -> None:
    category = Category.objects.create(name=f"压测{run.number}")
    for i in range(30):
        product = Product.objects.create(category=category, name=f"压测商品{run.number}-{i}")
        run.skus.append(
            Sku.objects.create(product=product, price_fen=run.rng.choice([990, 1990, 3900, 6800, 12800]), stock=10**6)
        )


def _customers(run: Run, count: int) -> None:
    rng = run.rng
    for start in range(0, count, BATCH):
        n = min(BATCH, count - start)
        with transaction.atomic():
            ids = reserve_ids(Customer, n)
            rows = [
                (
                    pk,
                    f"vol-{run.number}-{start + k}",
                    _name(rng) if rng.random() < 0.9 else "",
                    f"13{run.number % 10}{(start + k) % 10**8:08d}" if rng.random() < 0.6 else "",
                    run.now - dt.timedelta(days=rng.uniform(30, 400)),
                )
                for k, pk in enumerate(ids)
            ]
            run.counts["customers"] += copy_rows(Customer, ("id", "openid", "nickname", "phone", "created_at"), rows)
        run.customers += ids
    _distributors(run)


def _distributors(run: Run) -> None:
    """2 % of the customers are distributors; 20 % of the customers were referred by one."""
    rng = run.rng
    chosen = rng.sample(run.customers, max(1, len(run.customers) // 50))
    with transaction.atomic():
        ids = reserve_ids(Distributor, len(chosen))
        rows = [(pk, cid, f"V{run.number:03d}{k:08d}") for k, (pk, cid) in enumerate(zip(ids, chosen))]
        run.counts["distributors"] += copy_rows(Distributor, ("id", "customer_id", "referral_code"), rows)
    by_customer = dict(zip(chosen, ids))
    for cid in run.customers:
        if rng.random() < 0.2:
            pick = rng.choice(ids)
            if by_customer.get(cid) != pick:
                run.referrer[cid] = pick


def _pick(rng: random.Random, choices: tuple) -> object:
    """One of ``choices`` = (items, cumulative weights), drawn by weight."""
    items, cumulative = choices
    return items[bisect(cumulative, rng.random() * cumulative[-1])]


def _weights(shares: dict) -> tuple:
    return tuple(shares), tuple(accumulate(shares.values()))


STATUSES = _weights(STATUS_SHARES)
HOURS = _weights(dict(enumerate(HOUR_WEIGHTS)))
LINE_COUNTS = _weights({1: 70, 2: 22, 3: 8})
QUANTITIES = _weights({1: 80, 2: 15, 3: 5})


def _created_at(run: Run, status: str) -> dt.datetime:
    """Unpaid: within the last day; else a day of the last 365 and a Shanghai hour by
    :data:`HOUR_WEIGHTS`, at least two hours ago."""
    rng = run.rng
    if status == OrderStatus.UNPAID:
        return run.now - dt.timedelta(seconds=rng.uniform(0, 86400))
    latest = run.now - dt.timedelta(hours=2)
    while True:
        seconds = _pick(rng, HOURS) * 3600 + int(rng.random() * 3600) - int(rng.random() * 365) * 86400
        created = run.midnight + dt.timedelta(seconds=seconds)
        if created < latest:
            return created


def _timeline(run: Run, status: str, created: dt.datetime) -> tuple[str, dict]:
    """The status actually reached by ``now`` and its times (later steps dropped if in the future)."""
    rng = run.rng
    times = {"created_at": created, "pay_deadline": created + dt.timedelta(minutes=30)}
    if status == OrderStatus.UNPAID:
        return status, times
    if status == OrderStatus.CANCELLED:
        times["cancelled_at"] = times["pay_deadline"]
        return status, times
    times["paid_at"] = created + dt.timedelta(seconds=rng.uniform(30, 900))
    if status in (OrderStatus.PAID, OrderStatus.REFUNDING, OrderStatus.REFUNDED):
        return status, times
    shipped = times["paid_at"] + dt.timedelta(hours=rng.uniform(2, 72))
    if shipped > run.now:
        return OrderStatus.PAID, times
    times["shipped_at"] = shipped
    # Received by the customer within AUTO_RECEIVE_DAYS, or received automatically then; the
    # last day's automatic receipts are left to the job.
    auto = dt.timedelta(days=settings.AUTO_RECEIVE_DAYS)
    completed = shipped + (auto if status == OrderStatus.SHIPPED else auto * rng.uniform(0.2, 1))
    if completed > run.now - (dt.timedelta(days=1) if status == OrderStatus.SHIPPED else dt.timedelta(0)):
        return OrderStatus.SHIPPED, times
    times["completed_at"] = completed
    return OrderStatus.COMPLETED, times


def _address(rng: random.Random) -> str:
    """The address snapshot as JSON text (its characters need no escaping)."""
    province, city, district = _any(rng, CITIES)
    phone = f"1{_any(rng, '3578')}{int(rng.random() * 10**9):09d}"
    r = rng.random
    detail = f"{1 + int(r() * 999)}号{1 + int(r() * 30)}栋{101 + int(r() * 2701)}室"
    return (
        f'{{"name": "{_name(rng)}", "phone": "{phone}", "province": "{province}", "city": "{city}", '
        f'"district": "{district}", "detail": "{detail}"}}'
    )


def _order(run: Run, pk: int, n: int) -> VolumeOrder:
    """Order number ``n`` of the run: goods, or (a :data:`volume_bookings.SHARE` of the paid
    ones, while the grid has cells) a consultation with its booking's fields."""
    rng = run.rng
    if n % UNPAID_EVERY and run.cells and rng.random() < volume_bookings.SHARE:
        return _consultation(run, pk, n)
    status = OrderStatus.UNPAID if n % UNPAID_EVERY == 0 else _pick(rng, STATUSES)
    status, times = _timeline(run, status, _created_at(run, status))
    lines = []
    for sku in rng.sample(run.skus, _pick(rng, LINE_COUNTS)):
        qty = _pick(rng, QUANTITIES)
        lines.append((pk, sku.pk, sku.product_id, sku.product.name, sku.price_fen, qty, sku.price_fen * qty))
    goods = sum(line[-1] for line in lines)
    order = _order_row(run, pk, n, Kind.GOODS, status, times, goods, 0 if goods >= 9900 else 1000, _address(rng))
    order.remark = "请尽快发货" if rng.random() < 0.05 else ""
    order.lines = lines
    return order


def _order_row(run: Run, pk: int, n: int, kind: str, status: str, times: dict, *amounts_address) -> VolumeOrder:
    """The order's own columns (``amounts_address``: goods fen, freight fen, address JSON text)."""
    rng = run.rng
    goods, freight, address = amounts_address
    return VolumeOrder(
        id=pk,
        order_no=f"V{run.number:03d}{n:09d}",
        order_key=f"vol-{run.number}-{n}",
        customer_id=_any(rng, run.customers),
        kind=kind,
        status=status,
        goods_fen=goods,
        freight_fen=freight,
        pay_method=(PayMethod.BALANCE if rng.random() < 0.15 else PayMethod.WECHAT) if "paid_at" in times else "",
        address=address,
        remark="",
        **times,
    )


def _consultation(run: Run, pk: int, n: int) -> VolumeOrder:
    """A consultation order on the next free cell of the run's grid (``volume_bookings``)."""
    index, day, hour = run.cells.pop()
    teacher_id, sku = run.teachers[index]
    start = dt.datetime(day.year, day.month, day.day, hour, tzinfo=SHANGHAI)
    status, times, booking = volume_bookings.consultation_timeline(run, start)
    order = _order_row(run, pk, n, Kind.CONSULTATION, status, times, sku.price_fen, 0, None)
    booking.update(teacher_id=teacher_id, product_id=sku.product_id, customer_id=order.customer_id)
    order.booking = booking
    order.lines = [(pk, sku.pk, sku.product_id, sku.product.name, sku.price_fen, 1, sku.price_fen)]
    return order


def seed(orders: int, customers: int, *, out=print) -> Counter:
    """Add ``customers`` customers and ``orders`` orders (one run); returns the rows written per table."""
    started = time.perf_counter()
    now = timezone.now()
    midnight = dt.datetime.combine(timezone.localtime(now, SHANGHAI).date(), dt.time(), tzinfo=SHANGHAI)
    run = Run(number=next_run_number(), now=now, rng=random.Random(orders * 7919 + customers), midnight=midnight)
    with transaction.atomic():
        _catalog(run)
    volume_bookings.consultation_teachers(run, orders)
    _customers(run, customers)
    out(f"run {run.number}: {customers} customers in {time.perf_counter() - started:.1f} s")
    for start in range(0, orders, BATCH):
        n = min(BATCH, orders - start)
        with transaction.atomic():
            ids = reserve_ids(Order, n)
            write_batch(run, [_order(run, pk, start + k) for k, pk in enumerate(ids)])
        done = start + n
        out(f"  {done:,} / {orders:,} orders, {time.perf_counter() - started:.1f} s")
    _totals_from_ledgers(run)
    days = day_figures.days_refresh_all(
        timezone.localdate(run.now) - dt.timedelta(days=401)
    )  # the days it wrote (customers: 400)
    out(f"  the dashboard's figures of {days} closed days summed again, {time.perf_counter() - started:.1f} s")
    if _vacuum_analyze():
        out(f"  the planner's statistics gathered (ANALYZE), {time.perf_counter() - started:.1f} s")
    out(f"run {run.number} done in {time.perf_counter() - started:.1f} s: {dict(sorted(run.counts.items()))}")
    return run.counts


def _vacuum_analyze() -> bool:
    """PostgreSQL after a bulk load (its manual, "Populating a Database"): fresh statistics for
    the planner and the visibility map for index-only scans, as autovacuum would leave them some
    minutes later. Inside a transaction (the test suite) only ANALYZE can run. False on SQLite."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE" if connection.in_atomic_block else "VACUUM (ANALYZE)")
    return True


def _totals_from_ledgers(run: Run) -> None:
    """This run's balances, points and distributor totals: the sums of their ledger rows."""
    mine = Customer.objects.filter(openid__startswith=f"vol-{run.number}-")
    for kind, column, extra in (("balance", "balance_fen", {}), ("points", "points", {"state": "available"})):
        total = (
            WalletEvent.objects.filter(customer=OuterRef("pk"), kind=kind, **extra)
            .order_by()
            .values("customer")
            .annotate(s=Sum("amount"))
            .values("s")
        )
        with transaction.atomic():
            mine.update(**{column: Coalesce(Subquery(total), 0)})
    for column, delta in (("available_fen", "available_delta_fen"), ("frozen_fen", "frozen_delta_fen")):
        total = (
            LedgerEntry.objects.filter(distributor=OuterRef("pk"))
            .order_by()
            .values("distributor")
            .annotate(s=Sum(delta))
            .values("s")
        )
        with transaction.atomic():
            Distributor.objects.filter(referral_code__startswith=f"V{run.number:03d}").update(
                **{column: Coalesce(Subquery(total), 0)}
            )


def refuse_reason() -> str:
    """Why seeding is refused here ("" when allowed): never under production settings."""
    if not settings.DEMO_SHOP_ALLOWED:
        return "生产环境（DEMO_SHOP_ALLOWED = False）不允许写入压测数据"
    return ""
