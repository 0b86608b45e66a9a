"""Writes for customers: login, addresses and the wallet (balance, points, coupons).

Wallet functions change a counter with a conditional UPDATE (``... WHERE balance_fen >= n``)
and write a ``WalletEvent`` whose UNIQUE ``(kind, reason, ref)`` makes a repeat a no-op. They
expect to run inside the caller's ``transaction.atomic()`` (the order or payment service), so
that the wallet change commits or rolls back with the business change.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.accounts import tokens, wechat
from apps.accounts.exceptions import InsufficientBalance, LoginCodeInvalid
from apps.accounts.models import Address, Coupon, Customer, WalletEvent


@dataclass(frozen=True)
class LoginResult:
    customer: Customer
    token: str


def customer_login(*, code: str) -> LoginResult:
    """Log a customer in with a ``wx.login`` code: code2session -> customer by openid -> token.

    A first login creates the customer. Raises the errors of ``wechat.code_to_session``.
    """
    session = wechat.code_to_session(code)
    customer, _ = Customer.objects.get_or_create(
        openid=session.openid, defaults={"unionid": session.unionid, "nickname": "微信用户"}
    )
    if not customer.is_active:
        raise LoginCodeInvalid("This account is disabled.")
    return LoginResult(customer=customer, token=tokens.token_issue(customer_id=customer.pk))


def customer_logout(*, token: str) -> None:
    """Revoke the token: the next request with it gets 401."""
    tokens.token_revoke(token)


def address_create(*, customer: Customer, **fields) -> Address:
    """Add an address; ``is_default=True`` (or a first address) makes it the only default."""
    with transaction.atomic():
        is_default = fields.pop("is_default", False) or not customer.addresses.exists()
        if is_default:
            customer.addresses.filter(is_default=True).update(is_default=False)
        return Address.objects.create(customer=customer, is_default=is_default, **fields)


def _event(customer_id: int, kind: str, reason: str, amount: int, ref: str) -> bool:
    """Insert a wallet event; False if this (kind, reason, ref) was already recorded."""
    try:
        with transaction.atomic():  # savepoint: a duplicate must not spoil the caller's transaction
            WalletEvent.objects.create(
                customer_id=customer_id, kind=kind, reason=reason, amount=amount, ref=ref
            )
    except IntegrityError:
        return False
    return True


def balance_debit(*, customer_id: int, amount_fen: int, ref: str) -> None:
    """Take ``amount_fen`` (fen, > 0) from the balance to pay order ``ref``; caller's transaction.

    Raises InsufficientBalance (nothing changed) when the balance is short.
    """
    assert amount_fen > 0
    updated = Customer.objects.filter(pk=customer_id, balance_fen__gte=amount_fen).update(
        balance_fen=F("balance_fen") - amount_fen
    )
    if updated != 1:
        raise InsufficientBalance(amount_fen=amount_fen)
    if not _event(customer_id, WalletEvent.Kind.BALANCE, WalletEvent.Reason.PAY, -amount_fen, ref):
        raise RuntimeError(f"order {ref} was already paid from the balance")  # rolls back


def balance_credit(*, customer_id: int, amount_fen: int, reason: str, ref: str) -> bool:
    """Give ``amount_fen`` (fen, > 0) back for ``(reason, ref)`` once; False if already done."""
    assert amount_fen > 0
    if not _event(customer_id, WalletEvent.Kind.BALANCE, reason, amount_fen, ref):
        return False
    Customer.objects.filter(pk=customer_id).update(balance_fen=F("balance_fen") + amount_fen)
    return True


def points_spend(*, customer_id: int, points: int, ref: str) -> bool:
    """Spend ``points`` on order ``ref`` (caller's transaction); False if the customer lacks them."""
    if points <= 0:
        return True
    updated = Customer.objects.filter(pk=customer_id, points__gte=points).update(
        points=F("points") - points
    )
    if updated != 1:
        return False
    _event(customer_id, WalletEvent.Kind.POINTS, WalletEvent.Reason.SPEND, -points, ref)
    return True


def points_credit(*, customer_id: int, points: int, reason: str, ref: str) -> bool:
    """Add ``points`` for ``(reason, ref)`` once (award for a paid order, return on cancel).

    False if already credited or ``points`` is 0.
    """
    if points <= 0:
        return False
    if not _event(customer_id, WalletEvent.Kind.POINTS, reason, points, ref):
        return False
    Customer.objects.filter(pk=customer_id).update(points=F("points") + points)
    return True


def coupon_take(*, coupon_id: int, customer_id: int, order_no: str) -> bool:
    """Mark the coupon used by ``order_no`` (available -> used); False if it is not available."""
    return (
        Coupon.objects.filter(
            pk=coupon_id,
            customer_id=customer_id,
            status=Coupon.Status.AVAILABLE,
            valid_until__gt=timezone.now(),
        ).update(status=Coupon.Status.USED, used_order_no=order_no)
        == 1
    )


def coupon_return(*, coupon_id: int, order_no: str) -> bool:
    """Make the coupon available again after ``order_no`` was cancelled, once."""
    return (
        Coupon.objects.filter(pk=coupon_id, status=Coupon.Status.USED, used_order_no=order_no)
        .update(status=Coupon.Status.AVAILABLE, used_order_no="")
        == 1
    )
