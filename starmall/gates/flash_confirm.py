"""A 秒杀 confirm decided in Redis, in front of Django: the flash-sale half of the ASGI gate.

``OrderGate`` (``starmall.gates.orders``) hands it a confirm of the shape it already
recognises that names a ``flash_sale_id`` (one SKU, no coupon, no points). It answers with two
Redis round trips at most, in the event loop, and only where Django would give the same answer:

1. ``flash_quota.PEEK`` (EVALSHA, read only): the token's customer, the sold-out flags, the sale's card
   and quota (``apps.marketing.flash_quota``), the customer's address card
   (``apps.accounts.address_cards``) and the freight terms (``apps.shipping.selectors``). A
   flag, a closed window or a quota below the units asked is the 409 at once: most buyers of a
   sale end here.
2. The draft is built exactly as ``order_confirm`` builds it (the sale's price and line, the
   default or chosen address, freight by ``apps.shipping.calculator.freight_quote``) and
   stored by the quota's TAKE script, which checks the window, takes the units from the sale's
   quota and the customer's allowance and writes the draft in the cache's own serialisation
   (``order_create`` reads it as any other) — or answers sold out / over the limit / not live
   in the same round trip. Answers: ``ConfirmOutSerializer``'s 200, or the shop's 409 with the
   detail ``flash_reservations.refusal`` gives Django's path too.

Anything it cannot answer exactly goes to Django: an unknown token, no card or quota loaded
(Django loads them), no address card or freight terms cached, an address other than the
card's, a SKU that is not the sale's, points or a coupon asked for, a total outside 1 fen ..
``MAX_ORDER_FEN``, a TAKE script Redis does not know (NOSCRIPT after a restart: both scripts are loaded again)
and any Redis error or slowness. A PEEK Redis does not know leaves the request to the sold-out
flags alone (:data:`FLAGS`), as any other confirm.

What the gate does not check that Django's confirm does: the per-customer cap of unpaid
orders (``order_create`` enforces it: a capped buyer is refused there and the reservation is
given back at once) and the SKU's own stock (create's conditional UPDATE; the sale's quota
never exceeds what the SKU held when it was scheduled).
"""

from __future__ import annotations

import datetime as dt
import json
import logging

from django.conf import settings
from django.utils import timezone
from redis.exceptions import NoScriptError

from apps.accounts import address_cards
from apps.accounts.tokens import token_key
from apps.catalog import soldout
from apps.catalog.models import Kind
from apps.marketing import flash_quota
from apps.orders import drafts, flash_reservations
from apps.orders.api.serializers import ConfirmOutSerializer
from apps.shipping.calculator import FreightLine, freight_quote
from apps.shipping.selectors import TERMS_CACHE_KEY
from starmall import cache_client

logger = logging.getLogger(__name__)

MAX_ORDER_FEN = 100_000_000  # apps.orders.services.MAX_ORDER_FEN (held equal by a test)

FLAGS = object()
"""What :func:`answer` returns when Redis did not know PEEK (restarted): the gate then judges the
request by the sold-out flags alone, as for any other confirm, while the scripts are loaded."""


async def scripts_load(client) -> None:
    """SCRIPT LOAD the gate's two scripts (after a NOSCRIPT: a restarted Redis)."""
    await client.script_load(flash_quota.PEEK)
    await client.script_load(flash_quota.TAKE)


def flash_shape(data: dict, quantities: dict[int, int]) -> bool:
    """True for a confirm the gate may decide: one SKU, ``flash_sale_id``, no coupon, no points."""
    return (
        len(quantities) == 1
        and data.get("flash_sale_id") is not None
        and data.get("coupon_id") is None
        and data.get("use_points", 0) in (0, False)
    )


def _text(value) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


async def answer(client, data: dict, quantities: dict[int, int], token: str):
    """``(status, payload dict)`` for a flash-sale confirm, or None: Django answers.

    ``client``: the gate's redis.asyncio client; ``data``: the parsed body (:func:`flash_shape`);
    ``quantities``: ``{sku_id: units}``; ``token``: the bearer token. Redis errors propagate
    (the gate then passes to Django); a NOSCRIPT loads the scripts again and passes.
    """
    sale_id = data["flash_sale_id"]
    ((sku_id, units),) = quantities.items()
    keys = [
        cache_client.make_key(token_key(token)),
        flash_quota.key(sale_id, "card"),
        flash_quota.key(sale_id, "quota"),
        cache_client.make_key(TERMS_CACHE_KEY),
        cache_client.make_key(soldout.sku_key(sku_id)),
        cache_client.make_key(soldout.flash_sale_key(sale_id)),
    ]
    try:
        peeked = await client.evalsha(flash_quota.sha("PEEK"), len(keys), *keys, address_cards.card_key(0)[:-1])
    except NoScriptError:
        await _load_quietly(client)
        return FLAGS
    customer = _text(peeked[0])
    if customer is None:
        return None  # unknown token: Django's 401
    flags = {}
    for flag_key, value in ((soldout.sku_key(sku_id), peeked[1]), (soldout.flash_sale_key(sale_id), peeked[2])):
        if value is not None:
            flags[flag_key] = int(value)
    refused = soldout.refusal(flags, quantities, sale_id)
    if refused is not None:
        return refused
    card_sku, starts_ms, ends_ms, active, info_raw, quota, address_raw, terms_raw = peeked[3:11]
    if card_sku is None or int(card_sku) != sku_id or info_raw is None or quota is None:
        return None  # not loaded, or not the sale's SKU (Django's 400): Django answers and loads
    info = json.loads(info_raw)
    now = timezone.now()
    now_ms = flash_quota.epoch_ms(now)
    if _text(active) != "1" or not int(starts_ms) <= now_ms < int(ends_ms):
        if not info["goods"]:
            return None  # a SKU off sale: Django's 404
        return flash_reservations.refusal(
            ["notlive"],
            sale_id=sale_id,
            sku_id=sku_id,
            units=units,
            starts_at=info["starts_at"],
            ends_at=info["ends_at"],
        )
    if int(quota) < units:
        return flash_reservations.refusal(
            ["soldout", int(quota)],
            sale_id=sale_id,
            sku_id=sku_id,
            units=units,
            starts_at=info["starts_at"],
            ends_at=info["ends_at"],
        )
    address = address_cards.card_read(address_raw)
    if address is None or terms_raw is None or data.get("address_id") not in (None, address["id"]):
        return None
    draft = _draft(
        int(customer), sale_id, sku_id, units, info, address, cache_client.default().client.decode(terms_raw), now
    )
    if draft is None:
        return None
    args = flash_reservations.take_args(
        customer_id=int(customer), units=units, now=now, draft=draft, sale_id=sale_id, sku_id=sku_id
    )
    take_keys = flash_quota.take_keys(sale_id, flash_reservations.draft_key(draft["order_key"]))
    try:
        taken = await client.evalsha(flash_quota.sha("TAKE"), len(take_keys), *take_keys, *args)
    except NoScriptError:  # restarted between the two scripts: nothing was written
        await _load_quietly(client)
        return None
    if _text(taken[0]) == "ok":
        return ConfirmOutSerializer(draft).data
    return flash_reservations.refusal(
        taken, sale_id=sale_id, sku_id=sku_id, units=units, starts_at=info["starts_at"], ends_at=info["ends_at"]
    )


def _draft(
    customer_id: int, sale_id: int, sku_id: int, units: int, info: dict, address: dict, terms: dict, now: dt.datetime
) -> dict | None:
    """The draft ``order_confirm`` would store (``OrderDraft.to_json``), or None when its total
    is one Django refuses."""
    price = info["price_fen"]
    line = drafts.DraftLine(
        sku_id=sku_id,
        product_id=info["product_id"],
        name=info["name"],
        specs=info["specs"],
        price_fen=price,
        quantity=units,
        amount_fen=price * units,
    )
    freight_fen = freight_quote(
        [
            FreightLine(
                template=terms.get(info["template_id"]),
                quantity=units,
                weight_g=info["weight_g"],
                volume_cm3=info["volume_cm3"],
                amount_fen=line.amount_fen,
            )
        ],
        address["province"],
        address["city"],
    )
    goods_fen = line.amount_fen
    if not 1 <= goods_fen + freight_fen <= MAX_ORDER_FEN:
        return None
    return drafts.OrderDraft(
        order_key=drafts.draft_new_key(),
        customer_id=customer_id,
        kind=Kind.GOODS.value,
        expires_at=timezone.localtime(now + dt.timedelta(seconds=settings.ORDER_DRAFT_TTL_SECONDS)).isoformat(),
        lines=[line],
        goods_fen=goods_fen,
        freight_fen=freight_fen,
        coupon_id=None,
        coupon_fen=0,
        points_used=0,
        points_fen=0,
        pay_fen=goods_fen + freight_fen,
        slot=None,
        address=address,
        flash_sale_id=sale_id,
        cart_items=None,
        usable_coupons=[],
    ).to_json()


async def _load_quietly(client) -> None:
    try:
        await scripts_load(client)
    except Exception:  # noqa: BLE001 - the next NOSCRIPT tries again; Django answers meanwhile
        logger.warning("flash-sale gate: could not load its scripts", exc_info=True)
