"""A customer's delivery address for the next goods order, kept in Redis for the flash-sale gate.

A 秒杀 confirm answered in front of Django (``starmall.gates.flash_confirm``) needs, without
PostgreSQL, the address ``order_confirm`` would choose (``selectors.address_default``: the default,
else the newest). The card, under :func:`card_key`, is that address as orders store it
(``{"id", **Address.snapshot()}``) plus :data:`CARD_EXTRAS`, as JSON, written from committed rows
after every address write (:func:`card_refresh_after_commit`) and by a confirm Django answered
(:func:`card_offer`). No card: the gate passes the confirm to Django. Redis errors are logged,
never raised: the card is an optimisation.
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

# Two address writes of one customer whose after-commit refreshes cross may leave the older
# address (still one the customer owns) in Redis: the TTL bounds how long.
CARD_SECONDS = 86400


#: ``name -> (customer_id -> JSON-able value)``: the card's further keys, registered by apps above
#: accounts from their ``AppConfig.ready()`` (``apps.members``: "member", the SVIP expiry for free
#: freight). An app that changes what its extra reads calls :func:`card_refresh_after_commit`.
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
