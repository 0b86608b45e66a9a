"""WeChat merchant transfers (商家转账, Pay API v3) of approved withdrawals: exactly one each.

The :class:`TransferBill` row is the durable record. :func:`transfer_send` claims it (a lease) and
marks it ``sending`` in its own committed UPDATE before a create goes out; from then on a lost
answer (timeout, dropped connection) is followed by a QUERY of the ``out_bill_no`` before anything
is sent again, so no withdrawal is transferred twice. The final state comes by WeChat's verified
notification (:data:`TRANSFER_HANDLER`) or :func:`transfers_sweep`'s query; :func:`transfer_apply` settles
it once (conditional UPDATE from a non-final state): ``SUCCESS`` -> withdrawal ``paid``; ``FAIL`` /
``CANCELLED`` -> ``failed``, the amount back to available. Unfinished after ``TRANSFER_STUCK_HOURS``: an alert.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.alerts.models import Alert
from apps.alerts.services import alert_raise
from apps.distribution import ledger
from apps.distribution.models import LedgerEntry, TransferBill, Withdrawal
from apps.payments import notifications, wechat_v3
from apps.payments.models import Notification

logger = logging.getLogger(__name__)

LEASE = dt.timedelta(seconds=60)
QUERY_EVERY = dt.timedelta(minutes=2)
NOTIFY_PATH = "/api/v1/payments/wechat/transfer-notify"

#: WeChat's states -> ours
STATES = {
    "ACCEPTED": TransferBill.State.PROCESSING,
    "PROCESSING": TransferBill.State.PROCESSING,
    "TRANSFERING": TransferBill.State.PROCESSING,
    "CANCELING": TransferBill.State.PROCESSING,
    "WAIT_USER_CONFIRM": TransferBill.State.WAIT_CONFIRM,
    "SUCCESS": TransferBill.State.SUCCESS,
    "FAIL": TransferBill.State.FAIL,
    "CANCELLED": TransferBill.State.CANCELLED,
}
OPEN = (
    TransferBill.State.NEW,
    TransferBill.State.SENDING,
    TransferBill.State.PROCESSING,
    TransferBill.State.WAIT_CONFIRM,
)


def _claim(bill_id: int, now: dt.datetime) -> bool:
    free = Q(locked_until__isnull=True) | Q(locked_until__lt=now)
    return TransferBill.objects.filter(free, pk=bill_id, state__in=OPEN).update(locked_until=now + LEASE) == 1


def _release(bill_id: int, **fields) -> None:
    TransferBill.objects.filter(pk=bill_id).update(locked_until=None, **fields)


def transfer_send(*, bill_id: int, now: dt.datetime | None = None) -> str:
    """One attempt to get the bill to WeChat and learn its state; returns the bill's state.

    A bill that may have been sent already (``sending``) is queried first: known to WeChat ->
    its state is applied (and, waiting for the user's confirmation without a ``package_info``
    yet, the same create is sent again to get it: WeChat answers the same bill); unknown ->
    sent. Any uncertain answer leaves the bill ``sending`` for the next attempt (sweep).
    Called by the worker, no transaction open (a lease guards against a second worker).
    """
    now = now or timezone.now()
    if not _claim(bill_id, now):
        return TransferBill.objects.filter(pk=bill_id).values_list("state", flat=True).first() or "missing"
    bill = TransferBill.objects.select_related("withdrawal").get(pk=bill_id)
    try:
        if bill.state == TransferBill.State.SENDING or bill.attempts:
            TransferBill.objects.filter(pk=bill.pk).update(queries=F("queries") + 1)
            found = wechat_v3.transfer_query(out_bill_no=bill.out_bill_no)
            if found is not None:
                state = transfer_apply(out_bill_no=bill.out_bill_no, answer=found)
                if (
                    state != TransferBill.State.WAIT_CONFIRM
                    or TransferBill.objects.filter(pk=bill.pk).exclude(package_info="").exists()
                ):
                    return state
        TransferBill.objects.filter(pk=bill.pk).update(state=TransferBill.State.SENDING, attempts=F("attempts") + 1)
        try:
            answer = wechat_v3.transfer_create(
                out_bill_no=bill.out_bill_no,
                openid=bill.openid,
                amount_fen=bill.amount_fen,
                remark="星商城推广佣金提现",
                notify_url=settings.SITE_URL + NOTIFY_PATH,
            )
        except wechat_v3.V3Refused as exc:
            if exc.status in TRANSIENT_REFUSALS:
                raise wechat_v3.V3Unavailable(str(exc)) from exc
            return _refused(bill, exc)
        return transfer_apply(out_bill_no=bill.out_bill_no, answer=answer)
    except (wechat_v3.V3Unavailable, wechat_v3.V3Refused) as exc:
        # No answer, or a query refused (a signing problem, a rate limit): whether WeChat holds a
        # bill is unknown, so nothing is settled; the next attempt queries first.
        logger.warning(
            "transfer %s: no usable answer (%s); it will be queried before anything is resent", bill.out_bill_no, exc
        )
        _release(bill.pk, last_error=str(exc)[:2000])
        return TransferBill.State.SENDING
    finally:
        TransferBill.objects.filter(pk=bill_id).update(locked_until=None)


#: 4xx answers to a create that say "not now" rather than "never": retried like no answer
TRANSIENT_REFUSALS = (401, 403, 429)


def _refused(bill: TransferBill, exc: wechat_v3.V3Refused) -> str:
    """WeChat definitely refused to create the bill (no such bill exists: the query before
    found none, or this was the first send): the withdrawal fails, the money goes back, staff
    are alerted (e.g. the merchant account lacks funds)."""
    logger.error("transfer %s refused by WeChat: %s", bill.out_bill_no, exc)
    TransferBill.objects.filter(pk=bill.pk).update(last_error=str(exc)[:2000])
    state = transfer_apply(
        out_bill_no=bill.out_bill_no, answer={"state": "FAIL", "fail_reason": f"{exc.code}: {exc.message}"[:200]}
    )
    alert_raise(
        key=f"transfer:{bill.out_bill_no}:refused",
        kind=Alert.Kind.PAYMENT_MANUAL,
        title=f"提现转账 {bill.out_bill_no} 被微信拒绝",
        text=(
            f"提现单 {bill.out_bill_no}（{bill.amount_fen / 100:.2f} 元）的商家转账被微信拒绝：{exc.code} "
            f"{exc.message}。提现已记为失败，金额已退回顾客的可提现佣金。"
        ),
    )
    return state


def transfer_apply(*, out_bill_no: str, answer: dict) -> str:
    """Record what WeChat said of a bill (a create's or query's answer, a notification's
    resource); settles the withdrawal once. Returns the bill's state afterwards.

    ``WAIT_USER_CONFIRM`` -> withdrawal ``wait_confirm`` with ``package_info``; ``SUCCESS`` ->
    ``paid`` (withdrawn total + amount); ``FAIL``/``CANCELLED`` -> ``failed``, amount back to
    available. Locks: the bill (conditional UPDATE), the withdrawal, the distributor.
    """
    state = STATES.get(str(answer.get("state", "")))
    if state is None:
        return TransferBill.objects.filter(out_bill_no=out_bill_no).values_list("state", flat=True).first() or "missing"
    now = timezone.now()
    extra = {"wechat_state": str(answer["state"])[:24], "last_error": ""}
    if answer.get("transfer_bill_no"):
        extra["transfer_bill_no"] = str(answer["transfer_bill_no"])[:64]
    if answer.get("package_info"):
        extra["package_info"] = str(answer["package_info"])
    with transaction.atomic():
        bill = (
            TransferBill.objects.select_for_update()
            .select_related("withdrawal")
            .filter(out_bill_no=out_bill_no)
            .first()
        )
        if bill is None:
            return "missing"
        if bill.state in TransferBill.FINAL:
            return bill.state  # settled before (a duplicate notification, a late query)
        if state in TransferBill.FINAL:
            extra.update(finished_at=now, fail_reason=str(answer.get("fail_reason") or "")[:200])
        TransferBill.objects.filter(pk=bill.pk).update(state=state, updated_at=now, **extra)
        _withdrawal_follow(bill.withdrawal, state=state, answer=answer, now=now)
    return state


def _withdrawal_follow(withdrawal: Withdrawal, *, state: str, answer: dict, now: dt.datetime) -> None:
    """Move the bill's withdrawal to match the bill's new ``state`` (conditional UPDATEs; the
    ledger is booked only by the UPDATE that settles it). The caller holds the bill's lock in
    its transaction.

    ``WAIT_CONFIRM``: approved -> wait_confirm. ``SUCCESS``: unsettled -> paid, withdrawn total
    + amount. ``FAIL``/``CANCELLED``: unsettled -> failed with the reason, amount back to
    available. Other states leave the withdrawal alone.
    """
    if state == TransferBill.State.WAIT_CONFIRM:
        Withdrawal.objects.filter(pk=withdrawal.pk, status=Withdrawal.Status.APPROVED).update(
            status=Withdrawal.Status.WAIT_CONFIRM
        )
    elif state == TransferBill.State.SUCCESS:
        if Withdrawal.objects.filter(pk=withdrawal.pk, status__in=Withdrawal.UNSETTLED).update(
            status=Withdrawal.Status.PAID, settled_at=now
        ):
            ledger.ledger_book(
                distributor_id=withdrawal.distributor_id,
                reason=LedgerEntry.Reason.WITHDRAW_PAID,
                ref=withdrawal.withdrawal_no,
                withdrawn=withdrawal.amount_fen,
            )
    elif state in (TransferBill.State.FAIL, TransferBill.State.CANCELLED):
        reason = (
            "用户未确认收款，已撤销"
            if state == TransferBill.State.CANCELLED
            else (f"转账失败：{answer.get('fail_reason') or '微信未说明'}")
        )
        if Withdrawal.objects.filter(pk=withdrawal.pk, status__in=Withdrawal.UNSETTLED).update(
            status=Withdrawal.Status.FAILED, settled_at=now, reason=reason[:200]
        ):
            ledger.ledger_book(
                distributor_id=withdrawal.distributor_id,
                reason=LedgerEntry.Reason.WITHDRAW_RETURN,
                ref=withdrawal.withdrawal_no,
                available=withdrawal.amount_fen,
            )


def _notified_apply(bill: TransferBill, fields: dict) -> str:
    """Apply a trusted, matched ``MCHTRANSFER.BILL.FINISHED`` notification (the handler's
    ``apply``: runs inside the transaction that writes its audit row). Locks the bill first (the
    same row :func:`transfer_apply` locks first), so racing copies line up: one is ``applied``,
    the rest ``duplicate``. A state we do not know is recorded ``bad_fields``."""
    state = TransferBill.objects.select_for_update().filter(pk=bill.pk).values_list("state", flat=True).first()
    if state in TransferBill.FINAL:
        return Notification.Outcome.DUPLICATE
    if STATES.get(fields.get("state", "")) is None:
        logger.error("transfer %s: notified state %r unknown", bill.out_bill_no, fields.get("state"))
        return Notification.Outcome.BAD_FIELDS
    transfer_apply(out_bill_no=bill.out_bill_no, answer=fields)
    return Notification.Outcome.APPLIED


#: WeChat's merchant-transfer notification in payments' table of callbacks
#: (``apps.payments.notifications``): the shared checks (trusted body, our ``out_bill_no``,
#: ``transfer_amount`` equal to the bill's) run first; registered from DistributionConfig.ready().
TRANSFER_HANDLER = notifications.Handler(
    callback=notifications.TRANSFER_RESULT,
    claims=lambda fields: True,
    find=lambda fields: TransferBill.objects.filter(out_bill_no=fields.get("out_bill_no", "")).first(),
    number="out_bill_no",
    amount="transfer_amount",
    expected_fen=lambda bill: bill.amount_fen,
    apply=_notified_apply,
    applied_before=lambda bill, fields: bill.state in TransferBill.FINAL,
)


def transfer_query_now(*, bill_id: int) -> str:
    """Ask WeChat about one bill now (the back office's 查询转账; the sweep): an unsent or
    uncertain bill goes through :func:`transfer_send` (query first), a bill WeChat holds is
    queried and its state applied. Returns the state."""
    bill = TransferBill.objects.get(pk=bill_id)
    if bill.state in TransferBill.FINAL:
        return bill.state
    if bill.state in (TransferBill.State.NEW, TransferBill.State.SENDING):
        return transfer_send(bill_id=bill.pk)
    TransferBill.objects.filter(pk=bill.pk).update(queries=F("queries") + 1, updated_at=timezone.now())
    try:
        found = wechat_v3.transfer_query(out_bill_no=bill.out_bill_no)
    except (wechat_v3.V3Unavailable, wechat_v3.V3Refused) as exc:
        TransferBill.objects.filter(pk=bill.pk).update(last_error=str(exc)[:2000])
        return bill.state
    if found is None:  # WeChat does not know a bill it accepted: send it (the same out_bill_no)
        return transfer_send(bill_id=bill.pk)
    return transfer_apply(out_bill_no=bill.out_bill_no, answer=found)


def transfers_sweep(*, now: dt.datetime | None = None, limit: int = 200) -> dict[str, int]:
    """Beat: send bills no worker sent (Redis down at commit), re-query uncertain ones, query
    the ones WeChat holds every ``QUERY_EVERY``, and alert on any unfinished past
    ``TRANSFER_STUCK_HOURS``. Returns counts."""
    now = now or timezone.now()
    free = Q(locked_until__isnull=True) | Q(locked_until__lt=now)
    sent = queried = alerted = 0
    unsent = TransferBill.objects.filter(
        free,
        state__in=(TransferBill.State.NEW, TransferBill.State.SENDING),
        updated_at__lt=now - dt.timedelta(seconds=30),
    )
    for pk in list(unsent.values_list("pk", flat=True)[:limit]):
        transfer_send(bill_id=pk, now=now)
        sent += 1
    held = TransferBill.objects.filter(
        free,
        state__in=(TransferBill.State.PROCESSING, TransferBill.State.WAIT_CONFIRM),
        updated_at__lt=now - QUERY_EVERY,
    )
    for pk in list(held.values_list("pk", flat=True)[:limit]):
        transfer_query_now(bill_id=pk)
        queried += 1
    stuck = TransferBill.objects.filter(
        state__in=OPEN, created_at__lt=now - dt.timedelta(hours=settings.TRANSFER_STUCK_HOURS)
    )
    for bill in stuck.select_related("withdrawal")[:limit]:
        alerted += alert_raise(
            key=f"transfer:{bill.out_bill_no}:stuck",
            kind=Alert.Kind.PAYMENT_MANUAL,
            title=f"提现转账 {bill.out_bill_no} 超过 {settings.TRANSFER_STUCK_HOURS} 小时未完成",
            text=(
                f"提现单 {bill.out_bill_no}（{bill.amount_fen / 100:.2f} 元）的商家转账仍为「{bill.get_state_display()}」"
                f"（微信状态 {bill.wechat_state or '未知'}），创建于 {timezone.localtime(bill.created_at):%Y-%m-%d %H:%M}。"
                f"请在后台「分销 › 提现」查询转账，或到微信支付商户平台核对。"
            ),
        )
    return {"sent": sent, "queried": queried, "alerted": alerted}


def transfers_reconcile(*, day: dt.date | None = None) -> dict[str, int]:
    """Beside the daily bill: every transfer created on Shanghai ``day`` (default yesterday) is
    queried and compared with WeChat — amount, and a final state of ours that WeChat does not
    share; an open bill WeChat already finished is settled now. Differences raise one
    reconciliation alert for the day. Returns ``{"checked", "settled", "differences"}``."""
    day = day or timezone.localdate() - dt.timedelta(days=1)
    start = dt.datetime.combine(day, dt.time.min, tzinfo=timezone.get_current_timezone())
    bills = (
        TransferBill.objects.filter(created_at__gte=start, created_at__lt=start + dt.timedelta(days=1))
        .exclude(state=TransferBill.State.NEW)
        .order_by("id")
    )
    checked = settled = 0
    differences: list[str] = []
    for bill in bills:
        checked += 1
        try:
            found = wechat_v3.transfer_query(out_bill_no=bill.out_bill_no)
        except (wechat_v3.V3Unavailable, wechat_v3.V3Refused) as exc:
            differences.append(f"{bill.out_bill_no}：查询失败 {exc}")
            continue
        if found is None:
            if bill.state not in (TransferBill.State.SENDING, TransferBill.State.FAIL):
                differences.append(f"{bill.out_bill_no}：本地「{bill.get_state_display()}」，微信无此单")
            continue
        theirs = STATES.get(str(found.get("state", "")))
        if found.get("transfer_amount") not in (None, bill.amount_fen):
            differences.append(
                f"{bill.out_bill_no}：金额 本地 {bill.amount_fen} 分，微信 {found.get('transfer_amount')} 分"
            )
        if bill.state in TransferBill.FINAL and theirs != bill.state:
            differences.append(f"{bill.out_bill_no}：本地「{bill.get_state_display()}」，微信 {found.get('state')}")
        elif bill.state not in TransferBill.FINAL and theirs in TransferBill.FINAL:
            transfer_apply(out_bill_no=bill.out_bill_no, answer=found)
            settled += 1
    if differences:
        alert_raise(
            key=f"transfers:reconcile:{day.isoformat()}",
            kind=Alert.Kind.RECONCILIATION,
            title=f"{day.isoformat()} 商家转账对账有 {len(differences)} 处差异",
            text="\n".join(differences[:50]),
        )
    return {"checked": checked, "settled": settled, "differences": len(differences)}
