"""Withdrawals (提现): the customer's request, staff's approval or rejection.

A request takes its amount out of the available commission at once (a ledger row and a
conditional ``available_fen >= amount`` UPDATE: racing requests never overdraw) and at most one
withdrawal per distributor is unsettled (partial UNIQUE index). Approval writes the ONE
:class:`TransferBill` (``out_bill_no`` = ``withdrawal_no``) and sends it after commit
(``apps/distribution/transfers.py``); rejection gives the amount back. Staff act through
these functions with the ``distribution.decide_withdrawal`` permission, from the back office
and from ``manage.py withdrawals``.
"""

from __future__ import annotations

import secrets
from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.distribution import ledger, referral
from apps.distribution.models import LedgerEntry, TransferBill, Withdrawal
from starmall.errors import InvalidInput, InvalidState, LimitExceeded, NotFound, ShopError
from starmall.staff_roles import roles_text

PERMISSION = "distribution.decide_withdrawal"
#: WeChat needs the payee's encrypted real name from 2,000 yuan up (WECHAT.md); the shop has none
MAX_AMOUNT_FEN = 199_999


class PermissionDenied(ShopError):
    """The staff user lacks ``distribution.decide_withdrawal`` (403 ``forbidden``)."""

    code = "forbidden"
    status = 403
    message = "没有审核提现的权限。"


def _check(user) -> str:
    if user is None or not user.is_active or not user.has_perm(PERMISSION):
        raise PermissionDenied(f"没有审核提现的权限，需{roles_text(PERMISSION)}审核。")
    return user.get_username()


def _new_no() -> str:
    return f"W{timezone.localtime():%Y%m%d%H%M%S}{secrets.randbelow(10**8):08d}"


def withdrawal_request(*, customer_id: int, amount_fen: int) -> Withdrawal:
    """The customer asks for ``amount_fen`` (fen) of their available commission.

    Raises InvalidInput (below ``WITHDRAW_MIN_FEN`` or above ``MAX_AMOUNT_FEN``; ``detail.amount_fen``), LimitExceeded
    (another withdrawal not settled yet), InsufficientBalance (more than is available); nothing
    is kept then. One transaction: the row, the ledger row, the guarded UPDATE.
    """
    if amount_fen < settings.WITHDRAW_MIN_FEN:
        raise InvalidInput(
            f"单次提现不少于 {settings.WITHDRAW_MIN_FEN / 100:g} 元。",
            amount_fen=[f"不少于 {settings.WITHDRAW_MIN_FEN} 分。"],
        )
    if amount_fen > MAX_AMOUNT_FEN:
        raise InvalidInput("单次提现不超过 1999.99 元。", amount_fen=[f"不超过 {MAX_AMOUNT_FEN} 分。"])
    distributor = referral.distributor_for(customer_id=customer_id)
    unsettled = LimitExceeded("上一笔提现尚未完成，请完成后再申请。")
    with transaction.atomic():
        if Withdrawal.objects.filter(distributor=distributor, status__in=Withdrawal.UNSETTLED).exists():
            raise unsettled
        try:
            with transaction.atomic():
                withdrawal = Withdrawal.objects.create(
                    withdrawal_no=_new_no(), distributor=distributor, amount_fen=amount_fen
                )
        except IntegrityError:
            raise unsettled from None  # a concurrent request of the same distributor won
        ledger.ledger_book(
            distributor_id=distributor.pk,
            reason=LedgerEntry.Reason.WITHDRAW,
            ref=withdrawal.withdrawal_no,
            available=-amount_fen,
            guard_available=True,
        )
    return withdrawal


def _get(withdrawal_no: str) -> Withdrawal:
    withdrawal = Withdrawal.objects.select_related("distributor__customer").filter(withdrawal_no=withdrawal_no).first()
    if withdrawal is None:
        raise NotFound("提现单不存在。")
    return withdrawal


def withdrawal_approve(*, withdrawal_no: str, user) -> Withdrawal:
    """Staff approve a pending withdrawal: ``pending -> approved`` (conditional UPDATE) and its
    ONE transfer bill, sent after commit. Raises PermissionDenied, NotFound, InvalidState."""
    actor = _check(user)
    withdrawal = _get(withdrawal_no)
    with transaction.atomic():
        if (
            Withdrawal.objects.filter(pk=withdrawal.pk, status=Withdrawal.Status.PENDING).update(
                status=Withdrawal.Status.APPROVED, decided_by=actor, decided_at=timezone.now()
            )
            != 1
        ):
            raise InvalidState(f"提现单 {withdrawal_no} 不是待审核状态。")
        bill = TransferBill.objects.create(
            withdrawal=withdrawal,
            out_bill_no=withdrawal.withdrawal_no,
            openid=withdrawal.distributor.customer.openid,
            amount_fen=withdrawal.amount_fen,
        )
        transaction.on_commit(partial(_dispatch, bill.pk))
    withdrawal.refresh_from_db()
    return withdrawal


def _dispatch(bill_id: int) -> None:
    from apps.distribution.tasks import transfer_send
    from starmall import dispatch

    dispatch.push(transfer_send, bill_id)  # if Redis is down, transfers_sweep sends it


def withdrawal_reject(*, withdrawal_no: str, reason: str, user) -> Withdrawal:
    """Staff reject a pending withdrawal with a reason; the amount goes back to available.
    Raises PermissionDenied, InvalidInput (no reason), NotFound, InvalidState."""
    actor = _check(user)
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput("请填写驳回原因。", reason=["请填写驳回原因。"])
    withdrawal = _get(withdrawal_no)
    with transaction.atomic():
        if (
            Withdrawal.objects.filter(pk=withdrawal.pk, status=Withdrawal.Status.PENDING).update(
                status=Withdrawal.Status.REJECTED,
                reason=reason[:200],
                decided_by=actor,
                decided_at=timezone.now(),
                settled_at=timezone.now(),
            )
            != 1
        ):
            raise InvalidState(f"提现单 {withdrawal_no} 不是待审核状态。")
        ledger.ledger_book(
            distributor_id=withdrawal.distributor_id,
            reason=LedgerEntry.Reason.WITHDRAW_RETURN,
            ref=withdrawal.withdrawal_no,
            available=withdrawal.amount_fen,
        )
    withdrawal.refresh_from_db()
    return withdrawal
