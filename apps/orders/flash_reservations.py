"""A 秒杀 draft is a reservation on the sale's Redis quota (``apps.marketing.flash_quota``).

Every flash-sale draft is written by the quota's TAKE script, from the ASGI gate
(``starmall.gates.flash_confirm``) or from ``order_confirm`` (:func:`draft_reserve`), so the quota
counts every draft while it is loaded. This module is the orders' side: :func:`refusal` (the
script's answer as the shop's error, so the gate's 409 is byte for byte Django's),
:func:`draft_reserve`, :func:`drafts_done` after commit, :func:`reservation_give_back` for a
refused create, and the beat jobs :func:`reservations_expire` and :func:`quotas_reconcile`, safe on
several machines at once and twice (the END script's HDEL ends each reservation once).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import Counter

from django.conf import settings
from django.db import connection
from django.utils import timezone

from apps.catalog.exceptions import InsufficientStock
from apps.marketing import flash_quota
from apps.marketing.exceptions import FlashSaleLimitExceeded, FlashSaleNotLive
from apps.marketing.models import FlashSale, FlashSalePurchase
from apps.orders import drafts
from apps.orders.models import Order
from starmall import cache_client

logger = logging.getLogger(__name__)

RECONCILE_LOCK_SECONDS = 30  # one reconciliation at a time across machines (a lock, not a guarantee)
PREPARE_AHEAD = dt.timedelta(minutes=5)  # beat loads a sale's quota this long before it starts


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def refusal(answer: list, *, sale_id: int, sku_id: int, units: int, starts_at: str, ends_at: str) -> Exception | None:
    """The shop's error for a TAKE answer (``[outcome, ...]``), or None for ``ok`` and for
    the answers that mean "load first" (``nocard``, ``noquota``). The details are those of
    ``flash_sales.flash_sale_check``: not live (window as ISO 8601, Shanghai), sold out
    (``available`` = the quota left), over the limit (``held``, ``limit_per_customer``)."""
    outcome = _text(answer[0])
    if outcome == "notlive":
        return FlashSaleNotLive(flash_sale_id=sale_id, starts_at=starts_at, ends_at=ends_at)
    if outcome == "soldout":
        return InsufficientStock(
            "秒杀商品已抢完。", flash_sale_id=sale_id, sku_id=sku_id, requested=units, available=max(0, int(answer[1]))
        )
    if outcome == "limit":
        return FlashSaleLimitExceeded(
            flash_sale_id=sale_id, limit_per_customer=int(answer[2]), held=int(answer[1]), requested=units
        )
    return None


def take_args(*, customer_id: int, units: int, now: dt.datetime, draft: dict, sale_id: int, sku_id: int) -> list:
    """ARGV of the TAKE script for ``draft`` (its :meth:`OrderDraft.to_json` dict, stored with
    the cache's own serialisation, so ``order_create`` reads it as any other draft)."""
    ttl = settings.ORDER_DRAFT_TTL_SECONDS
    due = now + dt.timedelta(seconds=ttl + flash_quota.RESERVATION_GRACE_SECONDS)
    return [
        customer_id,
        units,
        flash_quota.epoch_ms(now),
        cache_client.default().client.encode(draft),
        ttl,
        draft["order_key"],
        flash_quota.epoch_ms(due),
        sku_id,
        sale_id,
    ]


def draft_key(order_key: str) -> str:
    """The draft's full Redis key (``apps.orders.drafts``), with the cache's KEY_PREFIX."""
    return cache_client.make_key(drafts.draft_key(order_key))


def draft_reserve(draft: dict, sale: FlashSale) -> dict:
    """Store a flash-sale draft (``order_confirm``) as a reservation on the sale's Redis quota;
    return the draft. Loads the sale's card and quota first when Redis has none. Raises
    InsufficientStock (quota gone), FlashSaleLimitExceeded, FlashSaleNotLive. When Redis
    fails the draft is stored plainly: create's conditional UPDATEs still decide."""
    units = sum(line["quantity"] for line in draft["lines"])
    args = take_args(
        customer_id=draft["customer_id"],
        units=units,
        now=timezone.now(),
        draft=draft,
        sale_id=sale.pk,
        sku_id=sale.sku_id,
    )
    try:
        take = flash_quota.script("TAKE")
        keys = flash_quota.take_keys(sale.pk, draft_key(draft["order_key"]))
        for _ in range(3):
            answer = take(keys=keys, args=args)
            outcome = _text(answer[0])
            if outcome == "nocard":
                flash_quota.card_write(sale)
            elif outcome == "noquota":
                flash_quota.quota_load(sale.pk)
            else:
                break
    except Exception:  # noqa: BLE001 - Redis down or failing: the database decides at create
        logger.warning("flash-sale quota unavailable; draft stored without a reservation", exc_info=True)
        drafts.draft_save(draft["order_key"], draft)
        return draft
    if outcome == "ok":
        return draft
    refused = refusal(
        answer,
        sale_id=sale.pk,
        sku_id=sale.sku_id,
        units=units,
        starts_at=timezone.localtime(sale.starts_at).isoformat(),
        ends_at=timezone.localtime(sale.ends_at).isoformat(),
    )
    if refused is None:  # still not loaded after loading: store it plainly
        drafts.draft_save(draft["order_key"], draft)
        return draft
    raise refused


def drafts_done(committed: list[drafts.OrderDraft]) -> None:
    """After the orders of ``committed`` drafts committed, in ONE Redis round trip: the drafts
    go, and each 秒杀 reservation is settled (its units are the database's now). Redis errors are
    logged: a draft expires by itself, beat's sweep settles a reservation whose order exists."""
    try:
        conn = cache_client.redis_client()
        pipe = conn.pipeline(transaction=False)
        pipe.delete(*[draft_key(draft.order_key) for draft in committed])
        end = flash_quota.script("END")
        for draft in committed:
            if draft.flash_sale_id:
                keys, args = flash_quota.end_call(draft.flash_sale_id, draft.order_key, give_back=False)
                end(keys=keys, args=args, client=pipe)
        pipe.execute()
    except Exception:  # noqa: BLE001 - bookkeeping after the commit
        logger.warning("could not drop %d drafts and settle their reservations", len(committed), exc_info=True)


def reservation_give_back(sale_id: int, order_key: str) -> None:
    """Create refused the draft ``order_key`` (nothing was kept): its reserved units go back to
    the quota and the allowance now. Redis errors are logged (the expiry sweep does it later)."""
    try:
        flash_quota.reservation_end(sale_id, order_key, give_back=True)
    except Exception:  # noqa: BLE001
        logger.warning("could not give back the reservation %s of flash sale %s", order_key, sale_id, exc_info=True)


def reservations_expire(*, now: dt.datetime | None = None) -> int:
    """Beat: end the reservations past their time (draft TTL plus grace): settled when an order
    of the key exists, else given back (the draft expired unused). Returns units given back."""
    now = now or timezone.now()
    due = flash_quota.reservations_due(now)
    if not due:
        return 0
    ordered = set(Order.objects.filter(order_key__in=[k for _, k in due]).values_list("order_key", flat=True))
    given = 0
    for sale_id, order_key in due:
        if order_key not in ordered:
            drafts.draft_delete(order_key)  # its units go back: the draft may not make an order any more
        given += flash_quota.reservation_end(sale_id, order_key, give_back=order_key not in ordered)
    return given


def quotas_reconcile(*, now: dt.datetime | None = None) -> dict[int, int]:
    """Beat: prepare and correct the Redis quota of every active sale starting within
    PREPARE_AHEAD or live; returns ``{sale_id: correction}`` (units added, negative taken).

    A missing quota is loaded first (:func:`apps.marketing.flash_quota.quota_load`), then corrected
    relatively: from the reservations and quota read at one instant and ONE SQL statement for the
    sale's stock and which reservations have a committed order, the quota should be ``stock -
    units of reservations without an order``; the difference is added with INCRBY (what happened
    meanwhile stays), the allowances likewise from ``FlashSalePurchase``. Runs under a Redis lock
    so machines take turns.
    """
    now = now or timezone.now()
    conn = cache_client.redis_client()
    lock = cache_client.make_key("flash:reconcile:lock")
    if not conn.set(lock, "1", nx=True, ex=RECONCILE_LOCK_SECONDS):
        return {}
    corrections: dict[int, int] = {}
    try:
        sales = FlashSale.objects.filter(is_active=True, starts_at__lte=now + PREPARE_AHEAD, ends_at__gt=now)
        for sale in sales:
            flash_quota.card_write(sale)
            flash_quota.quota_load(sale.pk)  # when missing; it counts every reservation left in Redis,
            corrections[sale.pk] = _reconcile_one(sale.pk)  # so one whose order committed is corrected here
    finally:
        conn.delete(lock)
    return corrections


def _reconcile_one(sale_id: int) -> int:
    quota, reserved, held_now = flash_quota.snapshot(sale_id)
    if quota is None:
        return 0
    stock, committed = _stock_and_ordered(sale_id, list(reserved))
    pending = {k: v for k, v in reserved.items() if k not in committed}
    # A cancel committing between the two readings can leave the quota too high by its units,
    # which only lets a buyer reach create's conditional UPDATEs.
    delta = stock - sum(units for _, units in pending.values()) - quota
    expected = Counter(
        dict(FlashSalePurchase.objects.filter(sale_id=sale_id, quantity__gt=0).values_list("customer_id", "quantity"))
    )
    for customer_id, units in pending.values():
        expected[customer_id] += units
    held_deltas = [(c, expected.get(c, 0) - held_now.get(c, 0)) for c in set(expected) | set(held_now)]
    if delta or any(d for _, d in held_deltas):
        logger.warning(
            "flash sale %s: Redis quota corrected by %+d (allowances of %d customers)",
            sale_id,
            delta,
            sum(1 for _, d in held_deltas if d),
        )
        flash_quota.adjust(sale_id, delta, held_deltas)
    return delta


def _stock_and_ordered(sale_id: int, order_keys: list[str]) -> tuple[int, set[str]]:
    """The sale's stock and which of ``order_keys`` have an order, from ONE statement (one
    snapshot of the database: an order committing between two reads would be counted twice)."""
    sale_table, order_table = FlashSale._meta.db_table, Order._meta.db_table
    if order_keys:
        marks = ", ".join(["%s"] * len(order_keys))
        sql = (
            f"SELECT s.stock, o.order_key FROM {sale_table} s LEFT JOIN {order_table} o "
            f"ON o.order_key IN ({marks}) WHERE s.id = %s"
        )
        params = [*order_keys, sale_id]
    else:
        sql, params = f"SELECT s.stock, NULL FROM {sale_table} s WHERE s.id = %s", [sale_id]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return rows[0][0], {key for _, key in rows if key is not None}
