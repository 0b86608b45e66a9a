"""A 秒杀 confirm answered in Redis, in front of Django (for ``starmall.gates.orders.OrderGate``).

Most buyers of a sale lose; here neither they nor the winners' confirms cost a Django request. A
confirm of :func:`flash_shape` costs two Redis round trips at most: ``flash_quota.PEEK`` (token,
sold-out flags, the sale's card and quota, the address card, freight terms) refuses a flag, a closed
window or a short quota with Django's 409; else ``flash_quota.TAKE`` stores the draft (built as
``order_confirm`` builds it) and takes the units, or refuses, in the same trip. Whatever it cannot
answer exactly as Django would is Django's (:func:`answer` returns None). Left to create, as for any
order: the unpaid-orders cap and the SKU's own stock.
"""

from __future__ import annotations

import datetime as dt
import json
import logging

from django.utils import timezone
from redis.exceptions import NoScriptError

from apps.accounts import address_cards
from apps.accounts.tokens import token_key
from apps.catalog import soldout
from apps.catalog.models import Kind
from apps.marketing import flash_quota
from apps.members import pricing
from apps.orders import drafts, flash_reservations
from apps.orders.api.serializers import ConfirmOutSerializer
from apps.shipping.calculator import FreightLine, freight_quote
from apps.shipping.selectors import TERMS_CACHE_KEY
from starmall import cache_client
from starmall.errors import InvalidInput

logger = logging.getLogger(__name__)

MAX_ORDER_FEN = drafts.MAX_ORDER_FEN  # the largest total the gate answers; above it Django refuses

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
    (the gate then passes to Django); a NOSCRIPT loads the scripts again and passes
    (:data:`FLAGS` when it was PEEK's).
    """
    sale_id = data["flash_sale_id"]
    ((sku_id, units),) = quantities.items()
    try:
        peeked = await _peek(client, token, sale_id, sku_id)
    except NoScriptError:
        await _load_quietly(client)
        return FLAGS
    customer = _text(peeked[0])
    if customer is None:
        return None  # unknown token: Django's 401
    refused = _flags_refusal(peeked[1], peeked[2], quantities, sale_id, sku_id)
    if refused is not None:
        return refused
    card_sku, starts_ms, ends_ms, active, info_raw, quota, address_raw, terms_raw = peeked[3:11]
    if card_sku is None or int(card_sku) != sku_id or info_raw is None or quota is None:
        return None  # not loaded, or not the sale's SKU (Django's 400): Django answers and loads
    info = json.loads(info_raw)
    now = timezone.now()
    if _text(active) != "1" or not int(starts_ms) <= flash_quota.epoch_ms(now) < int(ends_ms):
        return _refusal(["notlive"], info, sale_id, sku_id, units) if info["goods"] else None  # else Django's 404
    if int(quota) < units:
        return _refusal(["soldout", int(quota)], info, sale_id, sku_id, units)
    address, extras = address_cards.card_split(address_raw)
    member = extras.get("member")  # the SVIP expiry (free freight)
    if address is None or member is None or terms_raw is None or data.get("address_id") not in (None, address["id"]):
        return None
    terms = cache_client.default().client.decode(terms_raw)
    svip = pricing.svip_at_ms(member["svip_until_ms"], now)
    draft = _draft(int(customer), sale_id, sku_id, units, info, address, terms, now, svip=svip)
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
    return _refusal(taken, info, sale_id, sku_id, units)


async def _peek(client, token: str, sale_id: int, sku_id: int) -> list:
    """PEEK's answer: the token's customer, the SKU's and the sale's sold-out flags, then the
    sale's card (SKU, start and end in epoch ms, active, info JSON), its quota, the customer's
    address card and the freight terms (``apps.marketing.flash_quota.PEEK``). Raises
    NoScriptError when Redis does not know the script."""
    keys = [
        cache_client.make_key(token_key(token)),
        flash_quota.key(sale_id, "card"),
        flash_quota.key(sale_id, "quota"),
        cache_client.make_key(TERMS_CACHE_KEY),
        cache_client.make_key(soldout.sku_key(sku_id)),
        cache_client.make_key(soldout.flash_sale_key(sale_id)),
    ]
    return await client.evalsha(flash_quota.sha("PEEK"), len(keys), *keys, address_cards.card_key(0)[:-1])


def _flags_refusal(sku_flag, sale_flag, quantities: dict[int, int], sale_id: int, sku_id: int):
    """Django's 409 for the sold-out flags PEEK read (``soldout.refusal``), or None."""
    flags = {}
    for flag_key, value in ((soldout.sku_key(sku_id), sku_flag), (soldout.flash_sale_key(sale_id), sale_flag)):
        if value is not None:
            flags[flag_key] = int(value)
    return soldout.refusal(flags, quantities, sale_id)


def _refusal(reason: list, info: dict, sale_id: int, sku_id: int, units: int):
    """Django's 409 for a sale not live, sold out or over the limit (``flash_reservations.refusal``);
    ``reason``: TAKE's answer, or the same shape."""
    return flash_reservations.refusal(
        reason, sale_id=sale_id, sku_id=sku_id, units=units, starts_at=info["starts_at"], ends_at=info["ends_at"]
    )


def _draft(
    customer_id: int,
    sale_id: int,
    sku_id: int,
    units: int,
    info: dict,
    address: dict,
    terms: dict,
    now: dt.datetime,
    *,
    svip: bool,
) -> dict | None:
    """The draft ``order_confirm`` would store (``OrderDraft.to_json``) from the sale's card
    ``info``, the address card and the freight ``terms`` (none while ``svip``:
    ``pricing.member_freight_fen``, as Django's confirm); None when Django refuses its total."""
    line = drafts.DraftLine.priced(
        sku_id=sku_id,
        product_id=info["product_id"],
        name=info["name"],
        specs=info["specs"],
        price_fen=info["price_fen"],
        quantity=units,
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
    freight_fen = pricing.member_freight_fen(freight_fen, svip=svip)
    try:
        draft = drafts.draft_build(
            customer_id=customer_id,
            kind=Kind.GOODS.value,
            lines=[line],
            freight_fen=freight_fen,
            address=address,
            flash_sale_id=sale_id,
            now=now,
        )
    except InvalidInput:  # goods + freight outside 1 fen .. MAX_ORDER_FEN: Django's 400
        return None
    return draft.to_json()


async def _load_quietly(client) -> None:
    try:
        await scripts_load(client)
    except Exception:  # noqa: BLE001 - the next NOSCRIPT tries again; Django answers meanwhile
        logger.warning("flash-sale gate: could not load its scripts", exc_info=True)
