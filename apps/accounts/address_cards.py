"""A customer's delivery address for the next goods order, kept in Redis for the flash-sale gate.

A 秒杀 confirm answered in front of Django (``starmall.gates.flash_confirm``) needs the address
``order_confirm`` would choose — the customer's default, else the newest
(``selectors.address_default``) — without PostgreSQL. The card is that address as orders
store it (``{"id", **Address.snapshot()}``, JSON), under :func:`card_key`.

It is written from committed rows: after the commit of every address write
(:func:`card_refresh_after_commit`, called by ``address_create``, ``address_update`` and
``address_delete``), which drops it at the start of the write; and on demand by a 秒杀 confirm
that Django answered with the customer's default address (:func:`card_offer`, only where no
card exists). Two address writes of one customer
whose after-commit refreshes cross could leave the older one in Redis; :data:`CARD_SECONDS`
bounds that, and the card is only ever used for an address the customer owns. No card (Redis
restarted, expired, never written): the gate passes the confirm to Django, which answers as
always. Redis errors are logged, never raised: the card is an optimisation.

The card also carries what apps above accounts need the gate to know of the customer
(:data:`CARD_EXTRAS`, ``{"member": {...}}``: members' SVIP expiry, for free freight); an app
that changes it calls :func:`card_refresh_after_commit`. :func:`card_read` gives the address
alone, :func:`card_extras` the rest, :func:`card_split` both from one parse.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from functools import partial

from django.core.cache import cache
from django.db import transaction

from starmall import cache_client

logger = logging.getLogger(__name__)

CARD_SECONDS = 86400  # the longest a card may outlive a crossed refresh (see the module's docstring)


#: ``name -> (customer_id -> JSON-able value)``: the card's further keys, registered by apps above
#: accounts from their ``AppConfig.ready()`` (``apps.members``: "member").
CARD_EXTRAS: dict[str, Callable[[int], object]] = {}


def _card_json(address) -> str:
    """The card of ``address`` (an Address): it as orders store it, plus :data:`CARD_EXTRAS`."""
    extras = {name: read(address.customer_id) for name, read in CARD_EXTRAS.items()}
    return json.dumps({"id": address.pk, **address.snapshot(), **extras}, ensure_ascii=False)


def card_key(customer_id: int) -> str:
    """The card's full Redis key (with the cache's KEY_PREFIX)."""
    return cache.make_key(f"accounts:address_card:{customer_id}")


def card_refresh(customer_id: int) -> None:
    """Write the customer's card from the database's committed rows (delete it when the
    customer has no address). Redis errors are logged."""
    from apps.accounts.models import Address

    address = Address.objects.filter(customer_id=customer_id).order_by("-is_default", "-id").first()
    try:
        conn = cache_client.redis_client()
        if address is None:
            conn.delete(card_key(customer_id))
        else:
            conn.set(card_key(customer_id), _card_json(address), ex=CARD_SECONDS)
    except Exception:  # noqa: BLE001 - without a card the gate passes to Django
        logger.warning("could not write the address card of customer %s", customer_id, exc_info=True)


def card_offer(address) -> None:
    """On demand: a confirm just read the customer's default ``address`` (an Address): write it
    as the card unless one exists (SET NX, so a refresh after an address write always wins over
    a read that raced it). Redis errors are logged."""
    try:
        conn = cache_client.redis_client()
        if not conn.exists(card_key(address.customer_id)):  # the extras cost reads: only when missing
            conn.set(card_key(address.customer_id), _card_json(address), ex=CARD_SECONDS, nx=True)
    except Exception:  # noqa: BLE001
        logger.warning("could not offer the address card of customer %s", address.customer_id, exc_info=True)


def card_refresh_after_commit(customer_id: int) -> None:
    """An address of the customer is being written: drop the card now (the gate then passes to
    Django) and write it again after the caller's transaction commits."""
    try:
        cache_client.redis_client().delete(card_key(customer_id))
    except Exception:  # noqa: BLE001 - the card expires by itself
        logger.warning("could not drop the address card of customer %s", customer_id, exc_info=True)
    transaction.on_commit(partial(card_refresh, customer_id))


def _card_load(raw: bytes | str | None) -> dict | None:
    if raw is None:
        return None
    try:
        card = json.loads(raw)
    except ValueError:
        return None
    return card if isinstance(card, dict) and isinstance(card.get("id"), int) else None


def card_split(raw: bytes | str | None) -> tuple[dict | None, dict]:
    """``(address, extras)`` from the card's raw Redis value, parsed once: the address dict
    without :data:`CARD_EXTRAS` (None: no usable card) and the extras it has, by name."""
    card = _card_load(raw)
    if card is None:
        return None, {}
    address = {k: v for k, v in card.items() if k not in CARD_EXTRAS}
    return address, {name: card[name] for name in CARD_EXTRAS if name in card}


def card_read(raw: bytes | str | None) -> dict | None:
    """The card's address dict from its raw Redis value (without :data:`CARD_EXTRAS`), or None."""
    return card_split(raw)[0]


def card_extras(raw: bytes | str | None) -> dict:
    """The card's :data:`CARD_EXTRAS` values by name (those it has) from its raw Redis value."""
    return card_split(raw)[1]
