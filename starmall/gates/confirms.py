"""A confirm's call in front of Django: ``order_confirm_many`` itself, on the worker's order threads.

``OrderGate`` answers what it can from Redis (sold-out flags, a 秒杀's quota). A confirm of the
shape it reads (``orders.confirm_request``) that Redis cannot decide — a plain SKU still in
stock, the rush on a product that went viral — is handed here instead of to Django's whole
request cycle: the body is validated by the view's own ``ConfirmInSerializer``, the customer
loaded as token auth loads it, and the confirms waiting together are priced by one
``order_confirm_many`` (the view's ``order_confirm`` is a batch of one), answered as the view and
Django's handler answer. Anything else (an invalid body, an inactive customer, an error) goes to Django.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.accounts.models import Customer
from apps.orders.api.serializers import ConfirmInSerializer, ConfirmOutSerializer
from apps.orders.confirm import order_confirm_many
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
    """On an order thread: each request answered ``(200, body)``, a ShopError, or None (Django).
    The batch's customers are loaded in one query and priced by one ``order_confirm_many``."""
    threads.connect()
    with threads.one_writer():
        return _many(requests)


def _many(requests: list[ConfirmRequest]) -> list:
    answers: list = [None] * len(requests)  # None: Django's 400 (body) or 401 (customer), in its words
    valid = {}
    for i, request in enumerate(requests):
        data = ConfirmInSerializer(data=request.data)
        if data.is_valid():
            valid[i] = data.validated_data
    # as token auth loads them: no ORDER BY to compile
    ids = {requests[i].customer_id for i in valid}
    customers = {c.pk: c for c in Customer.objects.filter(pk__in=ids, is_active=True).order_by()}
    calls = [(i, customers[requests[i].customer_id], valid[i]) for i in valid if requests[i].customer_id in customers]
    results = order_confirm_many([(customer, data) for _, customer, data in calls]) if calls else []
    for (i, _, _), result in zip(calls, results, strict=True):
        answers[i] = _answer(result)
    return answers


def _answer(result):
    if isinstance(result, ServiceUnavailable):
        return None  # Django adds its Retry-After
    if isinstance(result, ShopError):
        return result
    if isinstance(result, Exception):
        return None  # Django answers (and logs) what the gate did not
    return 200, ConfirmOutSerializer(result).data


async def answer(confirms: postgres.BatchQueue, customer_id: int, data: dict):
    """``(200, body)`` of the draft, the refusal (a ShopError), or None: Django answers."""
    return await confirms.submit(ConfirmRequest(customer_id, data), CONNECTION_WAIT_SECONDS)
