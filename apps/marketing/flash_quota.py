"""A flash sale's (秒杀) quota in Redis: who wins is decided there, PostgreSQL stays the truth.

At confirm ONE Lua script (:data:`TAKE`, by EVALSHA from the gate ``starmall.gates.flash_confirm``
and from ``order_confirm``) checks the window, takes the units from the quota and the customer's
allowance, records the reservation and writes the draft (or answers why not), atomically. The
database stays the final guard: ``order_create``'s conditional UPDATEs (``flash_sales``) refuse
what it does not hold. A missing quota is never "sold out" (``noquota``: :func:`quota_load`).
Keys: the comment above :data:`CARD_SECONDS`. Giving back: :func:`units_returned` and
``apps.orders.flash_reservations`` (expiry sweep, refused creates, reconciliation).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Iterable

from django.utils import timezone

from starmall import cache_client

logger = logging.getLogger(__name__)

# Keys per sale ``s`` (:func:`key`, under the cache's KEY_PREFIX):
# - ``flash:s:card`` (hash, CARD_SECONDS): ``sku_id``, ``starts_ms``/``ends_ms`` (epoch ms), ``limit``,
#   ``active``, and ``info`` (JSON: the draft line's product, name, specs and price, the freight inputs,
#   the window as ISO 8601). Written by :func:`card_write` (on demand, by beat); dropped on staff edits.
# - ``flash:s:quota`` (int, no TTL): units the sale can still hand out = its ``stock`` in the database
#   minus units reserved by drafts not yet turned into orders.
# - ``flash:s:held`` (hash ``customer_id -> units``): ``FlashSalePurchase.quantity`` + reservations.
# - ``flash:s:res`` (hash ``order_key -> "customer_id:units"``): the reservations; the global
#   ``flash:due`` (zset ``"s:order_key" -> epoch ms``): when each is given back unless its order was
#   created (draft TTL plus RESERVATION_GRACE_SECONDS).
CARD_SECONDS = 60  # a card is refreshed by beat and on demand; staff edits drop it at once
RESERVATION_GRACE_SECONDS = 60  # past the draft's TTL before an unused reservation is given back
DUE_KEY = "flash:due"

# KEYS: card, quota, held, res, due, draft; ARGV: customer_id, units, now_ms, draft bytes,
# draft ttl s, order_key, due_ms, sku_id, sale_id. Answers: {"ok", quota left}, {"soldout",
# quota}, {"limit", held, limit}, {"notlive"}, {"nocard"}, {"noquota"}.
TAKE = """
local card = redis.call('HMGET', KEYS[1], 'sku_id', 'starts_ms', 'ends_ms', 'limit', 'active')
if not card[1] or card[1] ~= ARGV[8] then return {'nocard'} end
local quota = redis.call('GET', KEYS[2])
if not quota then return {'noquota'} end
local now = tonumber(ARGV[3])
if card[5] ~= '1' or now < tonumber(card[2]) or now >= tonumber(card[3]) then return {'notlive'} end
local units = tonumber(ARGV[2])
quota = tonumber(quota)
if quota < units then return {'soldout', quota} end
local held = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
if held + units > tonumber(card[4]) then return {'limit', held, tonumber(card[4])} end
redis.call('DECRBY', KEYS[2], units)
redis.call('HINCRBY', KEYS[3], ARGV[1], units)
redis.call('HSET', KEYS[4], ARGV[6], ARGV[1] .. ':' .. units)
redis.call('ZADD', KEYS[5], ARGV[7], ARGV[9] .. ':' .. ARGV[6])
redis.call('SET', KEYS[6], ARGV[4], 'EX', ARGV[5])
return {'ok', quota - units}
"""

# KEYS: quota, held, res, due; ARGV: order_key, due member, give back (1) or settle (0).
# Give back: the reservation's units return to the quota and the allowance (once: HDEL decides).
# Settle: the order was created (its units are the database's now): only the record goes.
END = """
redis.call('ZREM', KEYS[4], ARGV[2])
local entry = redis.call('HGET', KEYS[3], ARGV[1])
if not entry then return 0 end
redis.call('HDEL', KEYS[3], ARGV[1])
if ARGV[3] ~= '1' then return 0 end
local sep = string.find(entry, ':')
local customer = string.sub(entry, 1, sep - 1)
local units = tonumber(string.sub(entry, sep + 1))
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('INCRBY', KEYS[1], units) end
if tonumber(redis.call('HINCRBY', KEYS[2], customer, -units)) <= 0 then redis.call('HDEL', KEYS[2], customer) end
return units
"""

# KEYS: quota, held, res; ARGV: stock, force (1/0), then customer_id, units pairs (purchases).
# quota = stock - reserved units; held = purchases + reservations. Without force only when the
# quota is missing. Returns the quota written, or -1 when it existed.
LOAD = """
if ARGV[2] ~= '1' and redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
local held = {}
local reserved = 0
local res = redis.call('HGETALL', KEYS[3])
for i = 2, #res, 2 do
  local sep = string.find(res[i], ':')
  local customer = string.sub(res[i], 1, sep - 1)
  local units = tonumber(string.sub(res[i], sep + 1))
  reserved = reserved + units
  held[customer] = (held[customer] or 0) + units
end
for i = 3, #ARGV, 2 do held[ARGV[i]] = (held[ARGV[i]] or 0) + tonumber(ARGV[i + 1]) end
redis.call('DEL', KEYS[2])
for customer, units in pairs(held) do
  if units > 0 then redis.call('HSET', KEYS[2], customer, units) end
end
local quota = tonumber(ARGV[1]) - reserved
if quota < 0 then quota = 0 end
redis.call('SET', KEYS[1], quota)
return quota
"""

# KEYS: quota, res, held. ARGV: none. Quota, reservations and allowances at one instant.
SNAPSHOT = """
return {redis.call('GET', KEYS[1]), redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3])}
"""

# KEYS: quota, held; ARGV: quota delta, then customer_id, delta pairs. Relative corrections
# (INCRBY), so what other scripts did meanwhile is kept. Only on an existing quota.
ADJUST = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local quota = redis.call('INCRBY', KEYS[1], ARGV[1])
if quota < 0 then redis.call('SET', KEYS[1], 0) end
for i = 2, #ARGV, 2 do
  if tonumber(redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1])) <= 0 then redis.call('HDEL', KEYS[2], ARGV[i]) end
end
return 1
"""

# The gate's read (``starmall.gates.flash_confirm``). KEYS: token, card, quota, freight terms, the
# SKU's and the sale's sold-out flags; ARGV: the address card's key without the customer id.
PEEK = """
local customer = redis.call('GET', KEYS[1])
if not customer then return {false} end
local card = redis.call('HMGET', KEYS[2], 'sku_id', 'starts_ms', 'ends_ms', 'active', 'info')
return {customer, redis.call('GET', KEYS[5]), redis.call('GET', KEYS[6]), card[1], card[2], card[3], card[4],
        card[5], redis.call('GET', KEYS[3]), redis.call('GET', ARGV[1] .. customer), redis.call('GET', KEYS[4])}
"""

SCRIPTS = ("TAKE", "END", "LOAD", "SNAPSHOT", "ADJUST", "PEEK")
_scripts: dict[tuple[int, str], object] = {}


def script(name: str):
    """The registered redis-py ``Script`` ``name`` (TAKE, END, LOAD, SNAPSHOT, ADJUST) on the
    cache's connection: EVALSHA, loading the script again after a NOSCRIPT (a restarted Redis)."""
    conn = cache_client.redis_client()
    found = _scripts.get((id(conn), name))  # one per client: the cache's server may change (tests)
    if found is None:
        found = _scripts.setdefault((id(conn), name), conn.register_script(globals()[name]))
    return found


def scripts_load() -> None:
    """SCRIPT LOAD every script, so the gate's EVALSHA finds them (a restarted Redis has none).
    Raises Redis errors."""
    conn = cache_client.redis_client()
    for name in SCRIPTS:
        conn.script_load(globals()[name])


def sha(name: str) -> str:
    """The SHA1 the gate passes to EVALSHA for script ``name``."""
    return script(name).sha


def key(sale_id: int, part: str) -> str:
    """A sale's key ``part`` (card, quota, held, res), with the cache's KEY_PREFIX."""
    return cache_client.make_key(f"flash:{sale_id}:{part}")


def due_key() -> str:
    """The zset of reservations by the time they are given back (epoch ms)."""
    return cache_client.make_key(DUE_KEY)


def due_member(sale_id: int, order_key: str) -> str:
    """A reservation's member in :func:`due_key`."""
    return f"{sale_id}:{order_key}"


def take_keys(sale_id: int, draft_key: str) -> list[str]:
    """KEYS of :data:`TAKE` for the sale and the draft's full key."""
    return [
        key(sale_id, "card"),
        key(sale_id, "quota"),
        key(sale_id, "held"),
        key(sale_id, "res"),
        due_key(),
        draft_key,
    ]


def epoch_ms(moment: dt.datetime) -> int:
    """Milliseconds since the epoch of an aware datetime."""
    return int(moment.timestamp() * 1000)


def card_write(sale) -> None:
    """Write the sale's card (``sale``: a FlashSale). Raises Redis errors."""
    from apps.catalog.models import Sku

    sku = Sku.objects.select_related("product").get(pk=sale.sku_id)
    info = {
        "product_id": sku.product_id,
        "name": sku.product.name,
        "specs": sku.specs,
        "price_fen": sale.price_fen,
        "template_id": sku.product.freight_template_id,
        "weight_g": sku.weight_g,
        "volume_cm3": sku.volume_cm3,
        "starts_at": timezone.localtime(sale.starts_at).isoformat(),
        "ends_at": timezone.localtime(sale.ends_at).isoformat(),
        "goods": sku.is_active and sku.product.is_active and sku.product.kind == "goods",
    }
    active = sale.is_active and info["goods"]
    pipe = cache_client.redis_client().pipeline(transaction=True)
    card = key(sale.pk, "card")
    pipe.delete(card)
    pipe.hset(
        card,
        mapping={
            "sku_id": sale.sku_id,
            "starts_ms": epoch_ms(sale.starts_at),
            "ends_ms": epoch_ms(sale.ends_at),
            "limit": sale.limit_per_customer,
            "active": "1" if active else "0",
            "info": json.dumps(info, ensure_ascii=False),
        },
    )
    pipe.expire(card, CARD_SECONDS)
    pipe.execute()
    scripts_load()


def card_drop(sale_id: int) -> None:
    """Staff changed the sale: drop its card (confirms go to Django, which writes it again)."""
    try:
        cache_client.redis_client().delete(key(sale_id, "card"))
    except Exception:  # noqa: BLE001 - it expires within CARD_SECONDS
        logger.warning("could not drop the flash-sale card %s", sale_id, exc_info=True)


def quota_load(sale_id: int, *, force: bool = False) -> int:
    """Load the sale's quota (``stock`` minus reserved units) and allowances (purchases plus
    reservations) from the database in one script; without ``force`` only when the quota is
    missing. Run when the sale is scheduled, by beat before and during it, and when a confirm
    finds no quota (an emptied Redis lost its reservations and drafts too, so the stock is the
    whole quota again). Returns the quota written, -1 when it existed. Raises Redis errors."""
    from apps.marketing.models import FlashSale, FlashSalePurchase

    stock = FlashSale.objects.values_list("stock", flat=True).get(pk=sale_id)
    pairs: list = []
    for customer_id, units in FlashSalePurchase.objects.filter(sale_id=sale_id, quantity__gt=0).values_list(
        "customer_id", "quantity"
    ):
        pairs += [customer_id, units]
    return int(
        script("LOAD")(
            keys=[key(sale_id, "quota"), key(sale_id, "held"), key(sale_id, "res")],
            args=[stock, 1 if force else 0, *pairs],
        )
    )


def reservation_end(sale_id: int, order_key: str, *, give_back: bool) -> int:
    """End a reservation: ``give_back`` returns its units to the quota and the allowance (the
    draft was never turned into an order); else the order was created and only the record
    goes. Once per reservation whoever calls; returns the units given back. Raises Redis errors."""
    keys, args = end_call(sale_id, order_key, give_back=give_back)
    return int(script("END")(keys=keys, args=args))


def end_call(sale_id: int, order_key: str, *, give_back: bool) -> tuple[list[str], list]:
    """``(KEYS, ARGV)`` of the END script for a reservation (:func:`reservation_end`; the create
    gate sends it in its after-commit pipeline)."""
    keys = [key(sale_id, "quota"), key(sale_id, "held"), key(sale_id, "res"), due_key()]
    return keys, [order_key, due_member(sale_id, order_key), 1 if give_back else 0]


def reservations_due(now: dt.datetime, limit: int = 500) -> list[tuple[int, str]]:
    """``[(sale_id, order_key)]`` of reservations past their give-back time."""
    members = cache_client.redis_client().zrangebyscore(due_key(), "-inf", epoch_ms(now), start=0, num=limit)
    out = []
    for member in members:
        sale_id, _, order_key = member.decode().partition(":")
        out.append((int(sale_id), order_key))
    return out


def snapshot(sale_id: int) -> tuple[int | None, dict[str, tuple[int, int]], dict[int, int]]:
    """``(quota or None, {order_key: (customer_id, units)}, {customer_id: units held})`` read
    at one instant."""
    quota, flat, held_flat = script("SNAPSHOT")(keys=[key(sale_id, "quota"), key(sale_id, "res"), key(sale_id, "held")])
    res = {}
    for i in range(0, len(flat), 2):
        customer, _, units = flat[i + 1].decode().partition(":")
        res[flat[i].decode()] = (int(customer), int(units))
    held = {int(held_flat[i]): int(held_flat[i + 1]) for i in range(0, len(held_flat), 2)}
    return (int(quota) if quota is not None else None), res, held


def adjust(sale_id: int, quota_delta: int, held_deltas: Iterable[tuple[int, int]] = ()) -> bool:
    """Relative corrections of an existing quota and allowances (INCRBY); False when the
    quota is not loaded (nothing to correct: loading computes it). Raises Redis errors."""
    args: list = [quota_delta]
    for customer_id, delta in held_deltas:
        if delta:
            args += [customer_id, delta]
    if quota_delta == 0 and len(args) == 1:
        return True
    return bool(script("ADJUST")(keys=[key(sale_id, "quota"), key(sale_id, "held")], args=args))


def units_returned(sale_id: int, customer_id: int, units: int, *, to_quota: bool) -> None:
    """After the commit of a cancel or refund of a flash-sale order: the customer's allowance
    shrinks by ``units`` and, when the sale's stock got them back (``to_quota``), so does the
    quota grow. Redis errors are logged: the reconciliation corrects the quota."""
    try:
        adjust(sale_id, units if to_quota else 0, [(customer_id, -units)])
    except Exception:  # noqa: BLE001
        logger.warning("could not give %s units back to the quota of flash sale %s", units, sale_id, exc_info=True)
