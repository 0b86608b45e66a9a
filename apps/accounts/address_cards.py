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
"""

from __future__ import annotations

import json
import logging
from functools import partial

from django.core.cache import cache
from django.db import transaction
from django_redis import get_redis_connection

logger = logging.getLogger(__name__)

CARD_SECONDS = 86400  # the longest a card may outlive a crossed refresh (see the module's docstring)


def card_key(customer_id: int) -> str:
    """The card's full Redis key (with the cache's KEY_PREFIX)."""
    return cache.make_key(f"accounts:address_card:{customer_id}")


def card_refresh(customer_id: int) -> None:
    """Write the customer's card from the database's committed rows (delete it when the
    customer has no address). Redis errors are logged."""
    from apps.accounts.models import Address

    address = Address.objects.filter(customer_id=customer_id).order_by("-is_default", "-id").first()
    try:
        conn = get_redis_connection("default")
        if address is None:
            conn.delete(card_key(customer_id))
        else:
            conn.set(
                card_key(customer_id),
                json.dumps({"id": address.pk, **address.snapshot()}, ensure_ascii=False),
                ex=CARD_SECONDS,
            )
    except Exception:  # noqa: BLE001 - without a card the gate passes to Django
        logger.warning("could not write the address card of customer %s", customer_id, exc_info=True)


def card_offer(address) -> None:
    """On demand: a confirm just read the customer's default ``address`` (an Address): write it
    as the card unless one exists (SET NX, so a refresh after an address write always wins over
    a read that raced it). Redis errors are logged."""
    try:
        get_redis_connection("default").set(
            card_key(address.customer_id),
            json.dumps({"id": address.pk, **address.snapshot()}, ensure_ascii=False),
            ex=CARD_SECONDS,
            nx=True,
        )
    except Exception:  # noqa: BLE001
        logger.warning("could not offer the address card of customer %s", address.customer_id, exc_info=True)


def card_refresh_after_commit(customer_id: int) -> None:
    """An address of the customer is being written: drop the card now (the gate then passes to
    Django) and write it again after the caller's transaction commits."""
    try:
        get_redis_connection("default").delete(card_key(customer_id))
    except Exception:  # noqa: BLE001 - the card expires by itself
        logger.warning("could not drop the address card of customer %s", customer_id, exc_info=True)
    transaction.on_commit(partial(card_refresh, customer_id))


def card_read(raw: bytes | str | None) -> dict | None:
    """The card's address dict from its raw Redis value, or None."""
    if raw is None:
        return None
    try:
        card = json.loads(raw)
    except ValueError:
        return None
    return card if isinstance(card, dict) and isinstance(card.get("id"), int) else None
