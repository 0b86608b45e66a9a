"""Self-pickup (自提) on the orders side: the store chosen at confirm, the pickup code given at
payment, and its QR picture.

Stores live in ``apps.stores``, a layer above orders: it registers a resolver at start-up
(:func:`store_resolver_register`), so orders never imports it, and its ``services.pickup_verify``
checks a code and calls ``apps.orders.services.order_mark_picked_up``. The code
(:func:`pickup_code_assign`) is UNIQUE among the orders that can still be collected (``paid`` /
``refunding``: ``order_pickup_code_live_uniq``). Only the customer sees it; staff see
``pickup_code_masked`` (``****5217``) and cannot search or filter by it (:data:`CODE_FIELD`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

import segno
from django.db import IntegrityError, transaction

from apps.orders.models import Delivery, Order
from starmall.errors import InvalidInput

CODE_DIGITS = 8
CODE_ATTEMPTS = 10
#: the order column no back-office search, filter or lookup may touch (``lookup_allowed``); lists,
#: the order page, exports, logs and alerts show it masked, and a store's staff verify by typing or
#: scanning what the customer shows
CODE_FIELD = "pickup_code"

#: store_id -> the store as the order keeps it (``{"id", "name", "address", "phone", "hours"}``),
#: or None for an unknown or closed store; registered by apps.stores
_store_resolver: Callable[[int], dict | None] | None = None


def store_resolver_register(resolver: Callable[[int], dict | None]) -> None:
    """apps.stores gives orders the way to look a store up (called from its ``ready()``)."""
    global _store_resolver
    _store_resolver = resolver


def pickup_store_choose(*, kind: str, delivery: str, store_id: int | None) -> dict | None:
    """Confirm's step for ``delivery``: None for ``express``; for ``pickup`` the store's snapshot.
    Raises InvalidInput: pickup of a consultation (``detail.delivery``), no or an unknown or
    closed store (``detail.store_id``)."""
    if delivery != Delivery.PICKUP:
        return None
    if kind != "goods":
        raise InvalidInput("咨询服务无需自提。", delivery=["只有实物商品可以到店自提"])
    store = _store_resolver(store_id) if (store_id and _store_resolver is not None) else None
    if store is None:
        raise InvalidInput(
            "请选择自提门店。" if not store_id else "自提门店不存在或已停业。", store_id=["请选择营业中的自提门店"]
        )
    return store


def pickup_code_assign(order: Order) -> str:
    """Give a paid pickup order its code of :data:`CODE_DIGITS` random digits (inside the paying
    transaction, after the transition to ``paid``, by a conditional UPDATE in a savepoint);
    returns it. An order that has one keeps it. Raises IntegrityError only if
    :data:`CODE_ATTEMPTS` draws all collided (practically never)."""
    if order.pickup_code:
        return order.pickup_code
    for attempt in range(CODE_ATTEMPTS):
        code = f"{secrets.randbelow(10**CODE_DIGITS):0{CODE_DIGITS}d}"
        try:
            with transaction.atomic():  # a savepoint: a collision leaves the paying transaction intact
                if Order.objects.filter(pk=order.pk, pickup_code="").update(pickup_code=code) == 1:
                    order.pickup_code = code
                    return code
                order.pickup_code = Order.objects.values_list("pickup_code", flat=True).get(pk=order.pk)
                return order.pickup_code
        except IntegrityError:  # another live order has it (one in 10**8 per live order): draw again
            if attempt == CODE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def pickup_qr_data_uri(code: str) -> str:
    """The code as a QR picture the mini-program shows as it is (``data:image/png;base64,...``)."""
    return segno.make(code, error="m").png_data_uri(scale=6, border=2)


def pickup_json(order: Order) -> dict | None:
    """``"pickup"`` of the order JSON: None for express orders; else ``{"store", "code", "qr",
    "verified_at"}`` — ``code``/``qr`` null until paid, and once verified only the code."""
    if order.delivery != Delivery.PICKUP:
        return None
    from django.utils import timezone

    code = order.pickup_code or None
    live = code and order.pickup_verified_at is None and order.status == "paid"
    return {
        "store": order.pickup_store,
        "code": code,
        "qr": pickup_qr_data_uri(code) if live else None,
        "verified_at": timezone.localtime(order.pickup_verified_at).isoformat() if order.pickup_verified_at else None,
    }
