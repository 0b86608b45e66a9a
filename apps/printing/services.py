"""Print jobs: asked for (by staff or by a payment), sent by the worker, retried, reprinted.

- :func:`print_job_request` writes the job row (UNIQUE ``key``: asking twice is one job), pushed after commit.
  A ticket goes to a printer; a label orders a waybill, whose number ships the order as by hand (``order_ship``).
- :func:`print_job_send` (the task's service) claims the row, calls the provider with no transaction
  open and records the answer at once: a ``done`` job is never sent again. A failure waits a backoff
  (its lease), then beat pushes it again (:func:`print_jobs_redispatch`): ``PrintJob.MAX_ATTEMPTS`` tries.
- :func:`print_job_reprint` (重打) is the only way to print a ticket again (a new job, new key). Print
  on payment: :func:`paid_kinds` / :func:`followup_print_ticket`, through the follow-up outbox.
"""

from __future__ import annotations

import datetime as dt
import logging
from functools import partial

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.catalog.models import Kind
from apps.orders import shipments
from apps.orders.models import Delivery, FollowUp, Order, OrderStatus
from apps.printing import providers, selectors, tickets
from apps.printing.models import Printer, PrintJob
from starmall import dispatch
from starmall.errors import InvalidInput, InvalidState

logger = logging.getLogger(__name__)

PERMISSION = "printing.print_order"
SHIP_PERMISSION = "orders.ship_order"  # a waybill ships the order: the shipping's permission too
PRINTABLE = (OrderStatus.PAID, OrderStatus.SHIPPED, OrderStatus.COMPLETED)
REDISPATCH_AFTER = dt.timedelta(minutes=1)


def _backoff(attempts: int) -> dt.timedelta:
    """The wait after the ``attempts``-th failed try: 30 s, 1, 2, 4 min."""
    return dt.timedelta(seconds=30 * 2 ** max(attempts - 1, 0))


def _check_user(user, kind: str) -> None:
    if user is None:
        return
    for perm in (PERMISSION, SHIP_PERMISSION) if kind == PrintJob.Kind.LABEL else (PERMISSION,):
        if not user.has_perm(perm):
            raise PermissionDenied(f"需要权限 {perm}")


def _check_order(order: Order, kind: str) -> None:
    """InvalidState unless ``order`` can have a ticket (paid, shipped or completed) or a
    waybill (a paid goods order delivered by express, with an address)."""
    if kind == PrintJob.Kind.TICKET:
        if order.status not in PRINTABLE:
            raise InvalidState("只有已支付的订单可以打印小票。", status=order.status)
        return
    if order.kind != Kind.GOODS or order.delivery == Delivery.PICKUP or not order.address:
        raise InvalidState("只有快递配送的实物订单可以打印电子面单。", status=order.status)
    if order.status != OrderStatus.PAID:
        raise InvalidState("只有待发货（已支付）的订单可以打印电子面单。", status=order.status)


def waybill_possible(order: Order) -> bool:
    """Whether ``order`` can have a waybill now (the order page shows the button then)."""
    try:
        _check_order(order, PrintJob.Kind.LABEL)
    except InvalidState:
        return False
    return True


def _insert(*, key: str, **fields) -> tuple[PrintJob, bool]:
    """The job under ``key``, made once (its own savepoint, so a duplicate leaves a caller's
    transaction usable); pushed to the worker after commit when made. Checks come before it:
    a refusal writes nothing."""
    try:
        with transaction.atomic():
            job = PrintJob.objects.create(key=key, **fields)
    except IntegrityError:
        return PrintJob.objects.get(key=key), False
    transaction.on_commit(partial(_push, job.pk))
    return job, True


def _push(job_id: int, *, sweep: bool = False) -> bool:
    from apps.printing.tasks import print_job_send_task

    return dispatch.push(print_job_send_task, job_id, sweep=sweep)


def print_job_request(
    *, order: Order, kind: str, actor: str, printer: Printer | None = None, user=None
) -> tuple[PrintJob, bool]:
    """Ask for ``order``'s ticket on ``printer`` (kind ``ticket``) or its waybill (``label``);
    ``(job, made)``. Asking again returns the first job (``made`` False): 重打 is
    :func:`print_job_reprint`. ``user`` (staff) must hold ``printing.print_order`` (and
    ``orders.ship_order`` for a waybill): PermissionDenied. InvalidState for an order that
    cannot have one, InvalidInput for a printer that is switched off.
    """
    _check_user(user, kind)
    _check_order(order, kind)
    if kind == PrintJob.Kind.TICKET:
        if printer is None or not printer.active:
            raise InvalidInput("请选择已启用的打印机。", printer=["打印机未启用"])
        key = f"ticket:{order.order_no}:{printer.pk}"
        return _insert(
            key=key, order=order, kind=kind, printer=printer, requested_by=actor, content=tickets.ticket_render(order)
        )
    return _insert(key=f"label:{order.order_no}", order=order, kind=kind, requested_by=actor)


def print_job_reprint(*, job: PrintJob, actor: str, user=None) -> PrintJob:
    """重打: the ticket of ``job`` printed again on its printer, as a NEW job (key ``<first
    key>:r<n>``); the ticket is rendered anew. Two clicks at once make one job (UNIQUE key).
    InvalidState for a waybill (its label is printed from the label URL) or a printer off."""
    _check_user(user, PrintJob.Kind.TICKET)
    if job.kind != PrintJob.Kind.TICKET:
        raise InvalidState("电子面单不能重打，请从面单链接打印。", kind=job.kind)
    if job.printer is None or not job.printer.active:
        raise InvalidState("打印机未启用，不能重打。")
    base = job.key.split(":r", 1)[0]
    n = PrintJob.objects.filter(key__startswith=f"{base}:r").count() + 1
    made, _ = _insert(
        key=f"{base}:r{n}",
        order=job.order,
        kind=job.kind,
        printer=job.printer,
        requested_by=actor,
        content=tickets.ticket_render(job.order),
    )
    return made


def print_job_retry(*, job_id: int, user=None) -> bool:
    """重试 a FAILED job (same key, same paper: it never printed): back to pending with fresh
    attempts, pushed now. False when it is not failed (any more)."""
    job = PrintJob.objects.get(pk=job_id)
    _check_user(user, job.kind)
    retried = PrintJob.objects.filter(pk=job_id, status=PrintJob.Status.FAILED).update(
        status=PrintJob.Status.PENDING, attempts=0, locked_until=None, error=""
    )
    if retried:
        transaction.on_commit(partial(_push, job_id))
    return bool(retried)


def _claim(job_id: int, now: dt.datetime) -> PrintJob | None:
    """``pending`` and not leased -> ``sending`` for LEASE_SECONDS, one more attempt; the job, or
    None when another worker holds it or it is finished."""
    free = Q(locked_until__isnull=True) | Q(locked_until__lt=now)

    def claim() -> int:
        return PrintJob.objects.filter(free, pk=job_id, status=PrintJob.Status.PENDING).update(
            status=PrintJob.Status.SENDING,
            attempts=F("attempts") + 1,
            locked_until=now + dt.timedelta(seconds=PrintJob.LEASE_SECONDS),
        )

    claimed = claim()
    # a worker that died while sending: its lease ran out, the job is free again (sent again:
    # the provider may have printed it; 飞鹅 has no idempotency key)
    if not claimed and PrintJob.objects.filter(pk=job_id, status=PrintJob.Status.SENDING, locked_until__lt=now).update(
        status=PrintJob.Status.PENDING
    ):
        claimed = claim()
    if not claimed:
        return None
    return PrintJob.objects.select_related("order", "printer").get(pk=job_id)


def print_job_send(job_id: int, *, now: dt.datetime | None = None) -> str:
    """Send one job; its status afterwards (``done``, ``pending`` to retry, ``failed``).

    Called by the worker outside any transaction: the provider is called with none open and
    the very next statement records ``done`` (autocommit), so a job is printed once, twice only
    if the worker dies between the provider's answer and that UPDATE. A done or held job is
    left alone (a redelivered task prints nothing).
    """
    now = now or timezone.now()
    job = _claim(job_id, now)
    if job is None:
        return PrintJob.objects.filter(pk=job_id).values_list("status", flat=True).first() or "missing"
    try:
        if job.kind == PrintJob.Kind.TICKET:
            return _send_ticket(job)
        return _send_label(job)
    except providers.ProviderError as exc:
        return _failed(job, exc.message, exc.answer, retry=exc.retry, now=now)
    except InvalidState as exc:  # the order moved on (refunded, shipped by hand) before its waybill
        return _failed(job, exc.message, "", retry=False, now=now)


def _done(job: PrintJob, **fields) -> str:
    PrintJob.objects.filter(pk=job.pk, status=PrintJob.Status.SENDING).update(
        status=PrintJob.Status.DONE, done_at=timezone.now(), locked_until=None, error="", **fields
    )
    return PrintJob.Status.DONE


def _failed(job: PrintJob, message: str, answer: str, *, retry: bool, now: dt.datetime) -> str:
    """Record a failed attempt: pending again after its backoff, or FAILED (no retry, or the
    attempts are spent)."""
    give_up = not retry or job.attempts >= PrintJob.MAX_ATTEMPTS
    status = PrintJob.Status.FAILED if give_up else PrintJob.Status.PENDING
    PrintJob.objects.filter(pk=job.pk, status=PrintJob.Status.SENDING).update(
        status=status,
        error=message[:2000],
        answer=answer[:2000],
        locked_until=None if give_up else now + _backoff(job.attempts),
    )
    log = logger.error if give_up else logger.warning
    log("print job %s (%s) attempt %s failed: %s", job.key, job.kind, job.attempts, message)
    return status


def _send_ticket(job: PrintJob) -> str:
    printer = job.printer
    print_id, answer = providers.printer_provider(printer.provider).print(
        sn=printer.sn, content=job.content, copies=printer.copies
    )
    return _done(job, answer=answer, note=f"已打印（{print_id}）"[:255])


def _send_label(job: PrintJob) -> str:
    """Order the waybill (the order must still be a paid goods order), record it, then ship
    the order with it as staff would (``order_ship``); the note says whether it shipped."""
    order = Order.objects.get(pk=job.order_id)
    _check_order(order, PrintJob.Kind.LABEL)
    address = order.address or {}
    lines = list(order.lines.order_by("id").values_list("name", "quantity"))
    place = "".join(str(address.get(k) or "") for k in ("province", "city", "district", "detail"))
    waybill = providers.waybill_provider().order(
        carrier_code=settings.WAYBILL_CARRIER,
        receiver=providers.Party(name=address.get("name", ""), mobile=address.get("phone", ""), address=place),
        sender=providers.Party(
            name=settings.WAYBILL_SENDER_NAME,
            mobile=settings.WAYBILL_SENDER_MOBILE,
            address=settings.WAYBILL_SENDER_ADDRESS,
        ),
        cargo=(lines[0][0] + (" 等" if len(lines) > 1 else "")) if lines else "商品",
        count=sum(q for _, q in lines) or 1,
        remark=order.order_no,
    )
    _done(
        job,
        answer=waybill.answer,
        carrier_code=waybill.carrier_code,
        tracking_no=waybill.tracking_no,
        label_url=waybill.label_url,
        note="面单已取号",
    )
    PrintJob.objects.filter(pk=job.pk).update(note=_ship(order, job, waybill)[:255])
    return PrintJob.Status.DONE


def _ship(order: Order, job: PrintJob, waybill: providers.Waybill) -> str:
    """Ship ``order`` with the waybill (the manual shipping's path); the job's note."""
    try:
        shipped = shipments.order_ship(
            order=order, actor=job.requested_by, carrier_code=waybill.carrier_code, tracking_no=waybill.tracking_no
        )
    except (InvalidState, InvalidInput) as exc:
        return f"面单已取号，订单未发货：{exc.message}"
    return "已发货" if shipped else "面单已取号，订单未发货：订单已不是待发货"


def print_jobs_redispatch(*, now: dt.datetime | None = None) -> int:
    """Beat: push again the pending jobs no worker finished (a push lost with Redis, a worker
    that died, a failure whose backoff is over); how many were pushed. Pushing twice is harmless:
    the claim lets one worker send."""
    now = now or timezone.now()
    free = Q(locked_until__isnull=True) | Q(locked_until__lt=now)
    stale = Q(status=PrintJob.Status.PENDING, created_at__lt=now - REDISPATCH_AFTER) | Q(
        status=PrintJob.Status.SENDING, locked_until__lt=now
    )
    ids = list(PrintJob.objects.filter(stale, free).order_by("id").values_list("pk", flat=True)[:500])
    return sum(_push(pk, sweep=True) for pk in ids)


# --- print on payment (the follow-up outbox) -----------------------------------------------


def paid_kinds(order: Order) -> list[str]:
    """``followups.PAID_KINDS`` entry, in the paying transaction: a ``print_ticket`` follow-up
    when some active printer prints on payment (``selectors.prints_on_payment``: remembered per process)."""
    if selectors.prints_on_payment():
        return [FollowUp.Kind.PRINT_TICKET]
    return []


def followup_print_ticket(followup: FollowUp) -> None:
    """Outbox handler of ``print_ticket``: one ticket job per active print-on-payment printer
    (keys as staff's 打印小票: a later click finds it printed). Runs in the follow-up's
    transaction; the jobs reach the worker after its commit."""
    order = followup.order
    if order.status not in PRINTABLE:  # cancelled or refunded before the worker came
        return
    for printer in Printer.objects.filter(active=True, print_on_payment=True).order_by("id"):
        print_job_request(order=order, kind=PrintJob.Kind.TICKET, printer=printer, actor="system:paid")
