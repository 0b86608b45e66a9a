"""Raising, sending and resolving alerts.

:func:`alert_raise` is called by the code that finds a problem, inside the transaction of the
state change that made it one (a refund turning FAILED, a payment turning MANUAL, ...): the row
is INSERTed once (UNIQUE ``key``), and only after commit is a Celery task queued to send it
(``transaction.on_commit``; a rollback sends nothing). The row is the source of truth: if Redis
is down at commit, beat's :func:`alerts_sweep` sends it a minute later; a backend that fails is
retried with back-off until ``MAX_ATTEMPTS``. Each backend delivers an alert once
(:class:`~apps.alerts.models.AlertDelivery`): a retry after the robot failed does not mail again.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from functools import partial

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.alerts import backends
from apps.alerts.backends import AlertMessage
from apps.alerts.models import Alert, AlertDelivery
from starmall import dispatch

logger = logging.getLogger(__name__)

# One sender at a time; a dead worker's claim expires. Longer than one attempt can take (the
# robot's 5 s timeout plus an SMTP exchange of up to 10 s a step), counted from the claim itself.
LEASE = dt.timedelta(minutes=5)
FIRST_SWEEP_AFTER = dt.timedelta(seconds=60)  # the sweep leaves a fresh alert to its task this long
BACKOFF_SECONDS = (60, 120, 300, 600, 1800, 3600, 3600)  # wait after failed attempt 1, 2, ...
MAX_ATTEMPTS = len(BACKOFF_SECONDS) + 1  # 8 attempts over about 2.7 hours, then FAILED
SWEEP_BATCH = 20  # alerts one sweep sends (one a minute: the WeCom robot's 20 a minute)


@transaction.atomic(savepoint=False)
def alert_raise(*, key: str, kind: str, title: str, text: str) -> bool:
    """Record the problem ``key`` once and send it after commit; True if this call recorded it.

    ``key``: one per problem, e.g. ``refund:<out_refund_no>:failed`` (at most 200 chars);
    ``kind``: an :class:`Alert.Kind`; ``title`` / ``text``: Chinese, what staff read (cut to 200
    and 4000 characters). A second raise of the same key while the alert is unhandled changes
    nothing and sends nothing (False). Once staff marked it handled, the problem coming back (a
    refund failing again after a retry, a payment MANUAL again) reopens it: unhandled, the new
    text, sent again to every backend (True). Joins the caller's transaction (or opens one);
    sending never happens inside it and never raises into the caller.
    """
    now = timezone.now()
    fields = {"kind": kind, "title": title[:200], "text": text[:4000], "next_attempt_at": now + FIRST_SWEEP_AFTER}
    alert, created = Alert.objects.get_or_create(key=key[:200], defaults=fields)
    if not created:
        reopened = Alert.objects.filter(pk=alert.pk, resolved_at__isnull=False).update(
            **fields,
            resolved_at=None,
            resolved_by="",
            status=Alert.Status.PENDING,
            created_at=now,
            sent_at=None,
            attempts=0,
            locked_until=None,
            last_error="",
        )
        if not reopened:
            return False
        AlertDelivery.objects.filter(alert_id=alert.pk).delete()  # every backend sends it again
        logger.info("alert %s reopened: %s", alert.key, title)
    else:
        logger.info("alert %s recorded: %s", alert.key, alert.title)
    transaction.on_commit(partial(alert_dispatch, alert.pk))
    return True


def alert_on_failure(mark: Callable[[], int], alert: Callable[[], dict[str, str]] | None) -> bool:
    """Make a state change and raise its one alert in one transaction; True if this call made it.

    ``mark``: the conditional UPDATE (with whatever must change with it) that moves a row to its
    failed state (a refund FAILED, a payment MANUAL, a follow-up or reminder FAILED), or back to
    pending for a retry; returns the number of rows it changed. ``alert``: builds the keyword
    arguments of :func:`alert_raise` (``key``, ``kind``, ``title``, ``text``); it is called, and
    the alert raised, only when ``mark`` changed exactly one row, so a second worker or a repeat
    that finds the row already moved raises nothing. None: a change that needs no alert (an
    attempt that will be retried). Joins the caller's transaction as a savepoint, or opens one.
    """
    with transaction.atomic():
        if mark() != 1:
            return False
        if alert is not None:
            alert_raise(**alert())
    return True


def alert_dispatch(alert_id: int) -> bool:
    """Queue the send task (Celery, after commit); False if Redis is down (the sweep sends it)."""
    from apps.alerts.tasks import alert_send

    return dispatch.push(alert_send, alert_id)


def alert_deliver(*, alert_id: int, now: dt.datetime | None = None) -> str:
    """One attempt to send the alert to every configured backend that has not delivered it yet;
    returns the alert's status afterwards ("pending", "sent", "failed", or "missing").

    Claimed first (PENDING, no live lease, and due — or never tried: the task queued at commit),
    so two deliveries of the task cannot send at once. Every backend error is caught and recorded
    on its delivery row; the alert then waits ``BACKOFF_SECONDS`` for the sweep, and turns FAILED
    after ``MAX_ATTEMPTS``. A backend at its ``rate_per_minute`` is held back a minute without
    using up an attempt.
    """
    now = now or timezone.now()
    free = Q(locked_until__isnull=True) | Q(locked_until__lt=now)
    due = Q(next_attempt_at__lte=now) | Q(attempts=0)
    claimed = Alert.objects.filter(free, due, pk=alert_id, status=Alert.Status.PENDING).update(
        locked_until=max(now, timezone.now()) + LEASE, attempts=F("attempts") + 1
    )
    alert = Alert.objects.filter(pk=alert_id).first()
    if alert is None:
        return "missing"
    if claimed != 1:
        return alert.status
    message = AlertMessage(
        key=alert.key,
        kind_label=alert.get_kind_display(),
        title=alert.title,
        text=alert.text,
        created_at=alert.created_at,
    )
    errors, held = [], []
    for path, backend in backends.configured():
        delivery, _ = AlertDelivery.objects.get_or_create(alert=alert, backend=path)
        if delivery.delivered_at:
            continue
        limit = getattr(backend, "rate_per_minute", None)
        if (
            limit
            and AlertDelivery.objects.filter(backend=path, delivered_at__gt=now - dt.timedelta(minutes=1)).count()
            >= limit
        ):
            held.append(f"{path}: 每分钟最多发送 {limit} 条，稍后重发")
            continue
        try:
            backend.send(message)
        except Exception as exc:  # noqa: BLE001 - any backend failure is recorded and retried
            error = f"{type(exc).__name__}: {exc}"[:2000]
            AlertDelivery.objects.filter(pk=delivery.pk).update(
                attempts=F("attempts") + 1, last_attempt_at=timezone.now(), last_error=error
            )
            logger.warning("alert %s not delivered by %s (attempt %s): %s", alert.key, path, alert.attempts, error)
            errors.append(f"{path}: {error}")
            continue
        AlertDelivery.objects.filter(pk=delivery.pk, delivered_at__isnull=True).update(
            delivered_at=timezone.now(), attempts=F("attempts") + 1, last_attempt_at=timezone.now(), last_error=""
        )
    return _finish(alert, now, errors, held)


def _finish(alert: Alert, now: dt.datetime, errors: list[str], held: list[str]) -> str:
    """Record the attempt's outcome on the claimed alert (lease released)."""
    pending = Alert.objects.filter(pk=alert.pk, status=Alert.Status.PENDING)
    if not errors and not held:
        pending.update(
            status=Alert.Status.SENT, sent_at=timezone.now(), locked_until=None, next_attempt_at=None, last_error=""
        )
        return Alert.Status.SENT
    if not errors:  # only held back by a rate limit: not a failed attempt
        pending.update(
            attempts=F("attempts") - 1,
            locked_until=None,
            last_error="\n".join(held),
            next_attempt_at=now + dt.timedelta(minutes=1),
        )
        return Alert.Status.PENDING
    if alert.attempts >= MAX_ATTEMPTS:
        pending.update(
            status=Alert.Status.FAILED,
            locked_until=None,
            next_attempt_at=None,
            last_error="\n".join(errors + held)[:4000],
        )
        logger.error("alert %s could not be sent after %s attempts", alert.key, alert.attempts)
        return Alert.Status.FAILED
    wait = dt.timedelta(seconds=BACKOFF_SECONDS[alert.attempts - 1])
    pending.update(locked_until=None, next_attempt_at=now + wait, last_error="\n".join(errors + held)[:4000])
    return Alert.Status.PENDING


def alerts_sweep(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Beat, every minute: send the due PENDING alerts (never sent because Redis was down at
    commit, or waiting out a back-off), at most ``SWEEP_BATCH``, oldest first; returns
    ``{status after: count}``."""
    now = now or timezone.now()
    free = Q(locked_until__isnull=True) | Q(locked_until__lt=now)
    ids = list(
        Alert.objects.filter(free, status=Alert.Status.PENDING, next_attempt_at__lte=now)
        .order_by("next_attempt_at", "pk")
        .values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    counts: dict[str, int] = {}
    for pk in ids:
        status = alert_deliver(alert_id=pk, now=now)
        counts[status] = counts.get(status, 0) + 1
    return counts


def alert_resolve(*, alert_id: int, actor: str) -> bool:
    """Mark the alert handled by ``actor`` (e.g. "staff:wang"); True if this call did it (an
    alert already handled keeps its first ``resolved_at`` / ``resolved_by``). Permission
    ``alerts.resolve_alert`` is the caller's to check (the admin action does)."""
    return (
        Alert.objects.filter(pk=alert_id, resolved_at__isnull=True).update(
            resolved_at=timezone.now(), resolved_by=actor[:150]
        )
        == 1
    )
