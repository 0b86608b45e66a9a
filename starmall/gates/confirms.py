"""A confirm's call in front of Django: ``order_confirm`` itself, on the worker's order threads.

``OrderGate`` answers what it can from Redis (sold-out flags, a 秒杀's quota). A confirm of the
shape it reads (``orders.confirm_request``) that Redis cannot decide — a plain SKU still in
stock, the rush on a product that went viral — is handed here instead of to Django's whole
request cycle: the body is validated by the view's own ``ConfirmInSerializer``, the customer
loaded as token auth loads it, and ``order_confirm`` (the function the view calls) prices the
cart. Its draft is answered as the view answers it; a refusal as Django's handler writes it.
Anything else (an invalid body, an inactive customer, an error) goes to Django.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.accounts.models import Customer
from apps.orders.api.serializers import ConfirmInSerializer, ConfirmOutSerializer
from apps.orders.confirm import order_confirm
from starmall.errors import ServiceUnavailable, ShopError
from starmall.gates import postgres, threads
from starmall.gates.threads import OrderThreads

CONNECTION_WAIT_SECONDS = 1.0  # no free order thread by then: Django answers


@dataclass(frozen=True)
class ConfirmRequest:
    """A confirm to call: the token's ``customer_id`` and the parsed JSON body ``data``."""

    customer_id: int
    data: dict


def batches(pool: OrderThreads, warn) -> postgres.BatchQueue:
    """The worker's confirms, handed to the order threads (several at once while all are busy)."""
    return postgres.BatchQueue(pool, pool.runner(_in_thread), warn=warn, max_items=8)


def _in_thread(requests: list[ConfirmRequest]) -> list:
    """On an order thread: each request answered ``(200, body)``, a ShopError, or None (Django)."""
    threads.connect()
    with threads.one_writer():
        return [_one(request) for request in requests]


def _one(request: ConfirmRequest):
    data = ConfirmInSerializer(data=request.data)
    if not data.is_valid():
        return None  # Django's 400, in its words
    # as token auth loads it: [:1], no ORDER BY to compile
    customer = next(iter(Customer.objects.filter(pk=request.customer_id, is_active=True)[:1]), None)
    if customer is None:
        return None  # Django's 401
    try:
        draft = order_confirm(customer=customer, **data.validated_data)
    except ServiceUnavailable:
        return None  # Django adds its Retry-After
    except ShopError as exc:
        return exc
    except Exception:  # noqa: BLE001 - Django answers (and logs) what the gate did not
        return None
    return 200, ConfirmOutSerializer(draft).data


async def answer(confirms: postgres.BatchQueue, customer_id: int, data: dict):
    """``(200, body)`` of the draft, the refusal (a ShopError), or None: Django answers."""
    return await confirms.submit(ConfirmRequest(customer_id, data), CONNECTION_WAIT_SECONDS)
