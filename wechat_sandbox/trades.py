"""What the simulated user does with a trade, and how refunds settle.

These are the transitions that in real life happen inside WeChat (the pay sheet, the bank):
the control API and tests drive them. All functions take the state's lock themselves.
"""

from __future__ import annotations

from . import payloads, wire
from .models import (
    CLOSED,
    NOTPAY,
    PAYERROR,
    R_PROCESSING,
    R_SUCCESS,
    REFUND_FINAL_STATES,
    SUCCESS,
    USERPAYING,
    Notification,
    Refund,
    Trade,
)
from .state import SandboxError, SandboxState

PAYABLE_STATES = (NOTPAY, USERPAYING, PAYERROR)


def _payable_trade(state: SandboxState, out_trade_no: str) -> Trade:
    """The trade, if the user can still pay it; else ``SandboxError`` (404 / 409)."""
    if not out_trade_no:
        raise SandboxError("out_trade_no is required", 400)
    trade = state.trades.get(out_trade_no)
    if trade is None:
        raise SandboxError(f"unknown out_trade_no {out_trade_no!r}", 404)
    if trade.trade_state == CLOSED:
        raise SandboxError(f"order {out_trade_no} is closed", 409)
    if trade.trade_state not in PAYABLE_STATES:
        raise SandboxError(f"order {out_trade_no} is already paid ({trade.trade_state})", 409)
    now = state.clock()
    if now >= trade.prepay_expires_at:
        raise SandboxError(f"prepay_id of {out_trade_no} has expired (2 h); call unifiedorder again", 409)
    expire = wire.parse_compact_time(trade.params.get("time_expire", ""))
    if expire is not None and now >= expire:
        raise SandboxError(f"order {out_trade_no} has expired (time_expire)", 409)
    return trade


def pay(
    state: SandboxState, out_trade_no: str, coupon_fee: int = 0, bank_type: str | None = None
) -> tuple[Trade, Notification | None]:
    """The user pays: the trade turns SUCCESS and a signed notice is queued for its notify_url
    (a v3 trade's in v3's format, on pay_v3's queue: the Notification is then None).

    Args:
        coupon_fee: fen paid by a WeChat coupon (0 <= coupon_fee < total_fee); the user pays
            ``total_fee - coupon_fee`` in cash.
        bank_type: e.g. ``CMB_DEBIT``; default the config's ``bank_type``.
    Raises:
        SandboxError: 400 bad coupon_fee, 404 unknown order, 409 closed / paid / expired.
    """
    if not isinstance(coupon_fee, int) or isinstance(coupon_fee, bool) or coupon_fee < 0:
        raise SandboxError("coupon_fee must be an integer number of fen >= 0", 400)
    with state.lock:
        trade = _payable_trade(state, out_trade_no)
        if coupon_fee >= trade.total_fee:
            raise SandboxError("coupon_fee must be less than total_fee", 400)
        now = state.clock()
        trade.trade_state = SUCCESS
        trade.paid_at = now
        trade.time_end = wire.compact_time(now)
        trade.transaction_id = wire.new_transaction_id(now)
        trade.bank_type = bank_type or state.config.bank_type
        trade.coupon_fee = coupon_fee
        trade.coupon_id = ("2000000" + wire.digits(5)) if coupon_fee else None
        trade.cash_fee = trade.total_fee - coupon_fee
        trade.events.append({"event": "paid", "at": wire.beijing(now).isoformat()})
        state.trades_by_transaction[trade.transaction_id] = trade
        if trade.api == "v3":  # a v3 trade's notice: signed JSON, AES-GCM resource (pay_v3_trades.py)
            from .pay_v3_trades import queue_paid

            queue_paid(state, trade)
            return trade, None
        body = payloads.payment_notification_xml(state.config, trade)
        notification = state.queue_notification("payment", trade.notify_url, body, trade.out_trade_no)
        return trade, notification


def _set_unpaid_state(state: SandboxState, out_trade_no: str, new_state: str, event: str) -> Trade:
    with state.lock:
        trade = _payable_trade(state, out_trade_no)
        trade.trade_state = new_state
        trade.events.append({"event": event, "at": wire.beijing(state.clock()).isoformat()})
        return trade


def user_paying(state: SandboxState, out_trade_no: str) -> Trade:
    """The user opened the pay sheet and is entering the password: trade_state USERPAYING."""
    return _set_unpaid_state(state, out_trade_no, USERPAYING, "user_paying")


def cancel(state: SandboxState, out_trade_no: str) -> Trade:
    """The user closed the pay sheet without paying: the trade stays (or goes back to) NOTPAY."""
    return _set_unpaid_state(state, out_trade_no, NOTPAY, "user_cancelled")


def pay_error(state: SandboxState, out_trade_no: str) -> Trade:
    """The payment failed (e.g. the bank refused): trade_state PAYERROR; the user may retry."""
    return _set_unpaid_state(state, out_trade_no, PAYERROR, "pay_error")


def refunded_fee(state: SandboxState, out_trade_no: str) -> int:
    """Fen committed to refunds of the trade (REFUNDCLOSE refunds give the money back)."""
    return sum(r.refund_fee for r in state.refunds_of(out_trade_no) if r.status != "REFUNDCLOSE")


def _finish_refund(state: SandboxState, refund: Refund, status: str) -> None:
    """Move a PROCESSING refund to ``status`` and queue its notice (caller holds the lock)."""
    refund.status = status
    if status == R_SUCCESS:
        refund.success_at = state.clock()
    url = refund.notify_url or state.config.refund_notify_url
    if url and refund.api == "v3":
        from .pay_v3_trades import queue_refund

        queue_refund(state, refund, url)
    elif url:
        body = payloads.refund_notification_xml(state.config, refund)
        state.queue_notification("refund", url, body, refund.out_trade_no, refund.out_refund_no)


def settle_due_refunds(state: SandboxState) -> None:
    """Refunds whose ``settle_at`` has passed turn SUCCESS (and their notices are queued)."""
    with state.lock:
        now = state.clock()
        for refund in list(state.refunds.values()):
            if refund.status == R_PROCESSING and refund.settle_at <= now:
                _finish_refund(state, refund, R_SUCCESS)


def settle_refunds(state: SandboxState, out_refund_no: str | None = None, status: str = R_SUCCESS) -> list[Refund]:
    """Finish PROCESSING refunds now (one, or all) with ``status`` SUCCESS / CHANGE /
    REFUNDCLOSE. Raises ``SandboxError`` for an unknown refund or status."""
    if status not in REFUND_FINAL_STATES:
        raise SandboxError(f"status must be one of {', '.join(REFUND_FINAL_STATES)}", 400)
    with state.lock:
        if out_refund_no is not None and out_refund_no not in state.refunds:
            raise SandboxError(f"unknown out_refund_no {out_refund_no!r}", 404)
        done = []
        for refund in list(state.refunds.values()):
            if refund.status != R_PROCESSING:
                continue
            if out_refund_no is not None and refund.out_refund_no != out_refund_no:
                continue
            _finish_refund(state, refund, status)
            done.append(refund)
        return done
