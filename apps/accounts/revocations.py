"""Revoking a deactivated customer's API tokens until Redis confirms it (a small outbox).

Authentication refuses an inactive customer's token anyway (it reads ``is_active``), but the
sold-out gate in front of Django (``starmall.gates.orders``) trusts a token Redis knows, so a
deactivation must reach Redis even when Redis is down. The transaction that deactivates or deletes
customers records a :class:`TokenRevocation` each (:func:`token_revocations_record`), tried once
after commit (:func:`token_revocations_process`); beat (:func:`token_revocations_sweep`) retries
the rows until Redis confirms, and records inactive customers who still have a token in Redis
(deactivated by SQL or another path around the ORM).
"""

from __future__ import annotations

import logging
from functools import partial

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from apps.accounts import tokens
from apps.accounts.models import Customer, TokenRevocation

logger = logging.getLogger(__name__)

SWEEP_BATCH = 500  # rows (customers) one run of the sweep tries
SCAN_CHUNK = 1000  # inactive customers read (and asked about in one Redis pipeline) at a time


@transaction.atomic(savepoint=False)
def token_revocations_record(*, customer_ids: list[int]) -> None:
    """Record that the tokens of ``customer_ids`` must be revoked, in the caller's transaction
    (it deactivates or deletes them; opens one when called alone), and try once after commit.

    One row per customer (UNIQUE ``customer_id``): a pending row gets the newer
    ``requested_at``. Touches no Redis itself: the try after commit logs its errors, never
    raises them into the caller.
    """
    ids = _record(customer_ids)
    if ids:
        transaction.on_commit(partial(token_revocations_process, customer_ids=ids, limit=len(ids)))


def _record(customer_ids: list[int]) -> list[int]:
    """Insert or refresh the rows of ``customer_ids`` (caller's transaction); the ids, sorted."""
    ids = sorted(set(customer_ids))
    if ids:
        now = timezone.now()
        TokenRevocation.objects.filter(customer_id__in=ids).update(requested_at=now)
        TokenRevocation.objects.bulk_create(
            [TokenRevocation(customer_id=pk, requested_at=now) for pk in ids], ignore_conflicts=True
        )
    return ids


def token_revocations_process(*, customer_ids: list[int] | None = None, limit: int = SWEEP_BATCH) -> dict[str, int]:
    """Revoke the tokens of pending rows (those of ``customer_ids``, or the ``limit`` least
    tried, oldest first) and delete each row Redis confirmed; returns ``{"revoked": customers,
    "tokens": tokens revoked, "failed": rows left}``.

    The first Redis error ends the run (Redis refuses the rest too): that row keeps
    ``attempts + 1`` and the error, and moves behind the others; the sweep tries again. Safe
    to run twice at once: revoking twice deletes nothing more.
    """
    rows = TokenRevocation.objects.order_by("attempts", "requested_at", "pk")
    if customer_ids is not None:
        rows = rows.filter(customer_id__in=customer_ids)
    counts = {"revoked": 0, "tokens": 0, "failed": 0}
    for pk, customer_id, requested_at in list(rows.values_list("pk", "customer_id", "requested_at")[:limit]):
        try:
            counts["tokens"] += tokens.tokens_revoke_customer(customer_id)
        except Exception as exc:  # noqa: BLE001 - Redis down or refusing: the row stays for the sweep
            logger.warning(
                "could not revoke the tokens of deactivated customer %s (%s: %s); beat's sweep retries",
                customer_id,
                type(exc).__name__,
                exc,
            )
            TokenRevocation.objects.filter(pk=pk).update(
                attempts=F("attempts") + 1, last_error=f"{type(exc).__name__}: {exc}"[:2000]
            )
            counts["failed"] += 1
            break
        # Only when no deactivation came after the one read (requested_at unchanged): a revocation
        # requested during the Redis call is not lost.
        TokenRevocation.objects.filter(pk=pk, requested_at=requested_at).delete()
        counts["revoked"] += 1
    return counts


def token_revocations_sweep(*, limit: int = SWEEP_BATCH) -> dict[str, int]:
    """Beat, every ``BEAT_SWEEP_SECONDS``: record a revocation for each inactive customer
    without a pending row who still has a token set in Redis (deactivated by SQL), then process
    the pending rows (:func:`token_revocations_process`). Returns its counts plus ``"found"``
    (inactive customers found with tokens and no row).

    Cost: one indexed query per ``SCAN_CHUNK`` inactive customers (the partial index
    ``customer_inactive_idx``) and one pipelined ``EXISTS`` round trip for each chunk. Redis
    errors propagate (the next run tries again).
    """
    found = []
    last = 0
    while True:
        chunk = list(
            Customer.objects.filter(is_active=False, pk__gt=last)
            .order_by("pk")
            .exclude(pk__in=TokenRevocation.objects.values("customer_id"))  # already pending
            .values_list("pk", flat=True)[:SCAN_CHUNK]
        )
        if not chunk:
            break
        found += tokens.tokens_listed(chunk)
        last = chunk[-1]
    if found:
        with transaction.atomic():  # read again: a customer reactivated meanwhile keeps their tokens
            _record(list(Customer.objects.filter(pk__in=found, is_active=False).values_list("pk", flat=True)))
    return {**token_revocations_process(limit=limit), "found": len(found)}
