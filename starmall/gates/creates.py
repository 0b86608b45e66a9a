"""A 秒杀 winner's create answered before Django: the ``POST /api/v1/orders`` half of the gate.

A winner of a flash sale holds a draft the confirm gate (``starmall.gates.flash_confirm``) wrote
in Redis; its create is the only request of the sale that must reach PostgreSQL. Through Django
it costs a request thread, the middleware, DRF, token auth's query and nine round trips while
the sale's row is locked (``docs/PERFORMANCE.md``). ``OrderGate`` (``apps.orders.api.
soldout_gate``) hands this module a create whose request it has checked as it checks a confirm
(Host, Content-Type, Accept, Content-Length, a bearer token), and :func:`answer`:

1. reads the token's customer and the draft with ONE Redis round trip (MGET);
2. when the draft is the customer's and of the shape ``apps.orders.flash_create.fits`` (goods to
   an address, maybe a 秒杀, nothing else to take), runs ``order_create``'s transaction in one
   round trip on the worker's own small pool of PostgreSQL connections
   (``CREATE_GATE_CONNECTIONS`` per process, psycopg_pool); winners arriving while those
   connections are busy wait for the next free one and go out together, one transaction per
   sale (:func:`batches`, ``flash_create.create_many``);
3. after the commit, what ``order_create`` does after its commit: drops the draft, settles the
   reservation (its units are the database's now) and flags SKUs left at 0 sold out, in one
   Redis pipeline (a failure there is logged: the draft expires, beat's sweep settles);
4. answers 201 with ``OrderSerializer``'s body and the headers Django sends
   (``tests/orders/test_flash_create.py`` compares them).

Everything else goes to Django untouched, which answers it as before: a body other than
``{"order_key": ..., "remark": ...}`` exactly as ``CreateInSerializer`` would keep it; an unknown
token; no draft (a replayed key: Django answers 200 with the order; an expired one: 410);
another customer's draft, or one stored under a key other than its own; another shape of draft;
SQLite; a refusal by PostgreSQL (caps, an inactive customer, sold out, the window closed:
nothing was kept, and Django's ``order_create`` gives the exact 409 and the reservation back); a second order of the key (UNIQUE order_key:
Django returns the first); no free connection within :data:`CONNECTION_WAIT_SECONDS`; any error.

The create throttle (``THROTTLE_ORDER_CREATE``) is DRF's, on its own cache key and history
(:func:`_throttle_check`): a customer over it goes to Django for the 429, and a create made here
is added to the history as Django adds its own.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from dataclasses import dataclass

from django.utils import timezone
from redis.exceptions import NoScriptError

from apps.accounts.tokens import token_key
from apps.catalog import soldout
from apps.marketing import flash_quota
from apps.orders import drafts, flash_create, flash_reservations
from apps.orders.api.serializers import OrderSerializer
from apps.orders.api.views import OrderCreateThrottle
from apps.orders.create import order_no_new, pay_deadline_of
from starmall import cache_client
from starmall.gates import postgres

logger = logging.getLogger(__name__)

CREATE_PATH = "/api/v1/orders"
CONNECTION_WAIT_SECONDS = 1.0  # no free connection by then: Django creates the order
BATCH_MAX = 32  # winners' creates in one transaction at most (one query message)
_MAX_KEY = 64  # CreateInSerializer.order_key
_MAX_REMARK = 200  # CreateInSerializer.remark


def create_request(data) -> tuple[str, str] | None:
    """``(order_key, remark)`` for a parsed create body that ``CreateInSerializer`` keeps exactly
    as it is (strings, no surrounding spaces on the key, a remark of at most 200 characters before
    it is trimmed: ``starmall.api.fields.CharField``); None for anything else, which Django judges."""
    if not isinstance(data, dict) or "order_key" not in data or not data.keys() <= {"order_key", "remark"}:
        return None
    key, remark = data["order_key"], data.get("remark", "")
    if type(key) is not str or not 1 <= len(key) <= _MAX_KEY or not key.isascii() or key != key.strip():
        return None
    if not key.isprintable() or type(remark) is not str or "\x00" in remark:
        return None
    try:
        remark.encode("utf-8")  # a lone surrogate: DRF's validator refuses it
    except UnicodeEncodeError:
        return None
    return (key, remark.strip()) if len(remark) <= _MAX_REMARK else None  # counted before trimming, as DRF


def batches(database: postgres.Database, warn) -> postgres.Batches:
    """The worker's creates of winners arriving together, sent as one transaction per sale
    (``flash_create.create_many``) on ``database``'s connections; ``warn``: the gate's."""
    return postgres.Batches(
        database, functools.partial(flash_create.create_many, warn=warn), warn=warn, max_items=BATCH_MAX
    )


async def answer(redis, creates: postgres.Batches, token: str, data) -> dict | None:
    """The 201 body of the order made from the draft in ``data`` (``OrderSerializer``), or None:
    Django answers. ``redis``: the gate's redis.asyncio client; ``creates``: the worker's
    :func:`batches`; ``token``: the bearer token; ``data``: the parsed JSON body. Redis errors
    propagate (the gate passes); PostgreSQL's are the batch's (Django answers)."""
    parsed = create_request(data)
    if parsed is None:
        return None
    order_key, remark = parsed
    pool = await creates.database.pool()
    if pool is None:
        return None
    customer, raw = await redis.mget([cache_client.make_key(token_key(token)), flash_reservations.draft_key(order_key)])
    if customer is None or raw is None:
        return None
    stored = cache_client.default().client.decode(raw)
    if (
        not isinstance(stored, dict)
        or stored.get("customer_id") != int(customer)
        or stored.get("order_key") != order_key
    ):
        return None
    draft = drafts.OrderDraft.from_json(stored)
    if not flash_create.fits(draft):
        return None
    throttle = await _throttle_check(redis, draft.customer_id)
    if throttle is None:
        return None  # over THROTTLE_ORDER_CREATE: Django's 429
    now = timezone.now()
    item = flash_create.Create(
        draft=draft,
        customer_id=draft.customer_id,
        order_no=order_no_new(now),
        remark=remark,
        pay_deadline=pay_deadline_of(draft, now),
        now=now,
    )
    created = await creates.submit(item, CONNECTION_WAIT_SECONDS)
    if created is None:
        return None  # refused or not sent, nothing kept; or a racing create made the key's order: Django answers
    await _after_commit(redis, draft, created.sold_out, throttle)
    return OrderSerializer(created.order).data


@dataclass
class Throttled:
    """The customer's create history as DRF's ``OrderCreateThrottle`` keeps it (``key``: the
    cache key, ``history``: request times, newest first, in seconds since the epoch, this create
    included; ``duration``: the window in seconds), or no throttle at all (``key`` None)."""

    key: str | None
    history: list[float]
    duration: int


async def _throttle_check(redis, customer_id: int) -> Throttled | None:
    """DRF's ``SimpleRateThrottle.allow_request`` for the create view, on the same cache key and
    history: None when the customer is over ``THROTTLE_ORDER_CREATE`` (Django answers the 429);
    else the history, to which the create is added after its commit (``_after_commit``), so
    Django counts the gate's creates and the gate Django's."""
    throttle = OrderCreateThrottle()
    if throttle.rate is None:
        return Throttled(None, [], 0)
    key = cache_client.make_key(throttle.cache_format % {"scope": throttle.scope, "ident": customer_id})
    raw = await redis.get(key)
    history = cache_client.default().client.decode(raw) if raw is not None else []
    now = throttle.timer()
    while history and history[-1] <= now - throttle.duration:
        history.pop()
    if len(history) >= throttle.num_requests:
        return None
    history.insert(0, now)
    return Throttled(key, history, throttle.duration)


async def _after_commit(redis, draft: drafts.OrderDraft, sold_out: list[int], throttle: Throttled) -> None:
    """``order_create``'s after-commit work: drop the draft, settle the 秒杀 reservation, flag
    SKUs left at 0, count the create in the throttle's history. Errors are logged: the draft
    expires by itself and beat's expiry sweep settles the reservation (its order exists); a
    flag only saves the database a refusal."""
    sale_id = draft.flash_sale_id
    for attempt in (1, 2):
        pipe = redis.pipeline(transaction=False)
        pipe.delete(flash_reservations.draft_key(draft.order_key))
        if throttle.key is not None:
            pipe.set(throttle.key, cache_client.default().client.encode(throttle.history), ex=throttle.duration)
        for sku_id in sold_out:
            pipe.set(cache_client.make_key(soldout.sku_key(sku_id)), 1, ex=soldout.FLAG_SECONDS)
        if sale_id:  # settled: the order holds the units now (flash_reservations.reservation_settle)
            keys, args = flash_quota.end_call(sale_id, draft.order_key, give_back=False)
            pipe.evalsha(flash_quota.sha("END"), len(keys), *keys, *args)
        try:
            await pipe.execute()
            return
        except NoScriptError:  # a restarted Redis: load END and settle again, once
            if attempt == 1:
                with contextlib.suppress(Exception):
                    await redis.script_load(flash_quota.END)
                continue
            logger.warning("create gate: could not settle the reservation %s", draft.order_key, exc_info=True)
        except Exception:  # noqa: BLE001 - the order is committed: this is bookkeeping
            logger.warning("create gate: after-commit Redis work failed for %s", draft.order_key, exc_info=True)
        return
