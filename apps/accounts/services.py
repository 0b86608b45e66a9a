"""Writes for customers: login, logout (token revocation), deactivation and addresses.

The wallet (balance, points, coupons) is in ``apps.accounts.wallet``.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction

from apps.accounts import address_cards, login_hooks, revocations, tokens, wechat
from apps.accounts.exceptions import LoginCodeInvalid
from apps.accounts.models import Address, Customer
from apps.accounts.wallet import customer_lock


@dataclass(frozen=True)
class LoginResult:
    customer: Customer
    token: str


def customer_login(*, code: str, scene: str = "") -> LoginResult:
    """Log a customer in with a ``wx.login`` code: code2session -> customer by openid -> token.

    A first login creates the customer. ``scene`` (the decoded mini-program scene, may be
    empty) goes to the login hooks (``login_hooks.LOGIN_HOOKS``): on the first login inside
    the creating transaction, so of concurrent first logins only the one that created the
    customer runs them as first. Raises the errors of ``wechat.code_to_session``, and
    LoginCodeInvalid for a deactivated customer (also one deactivated while logging in).
    """
    session = wechat.code_to_session(code)
    customer = Customer.objects.filter(openid=session.openid).first()
    first = False
    if customer is None:
        try:
            with transaction.atomic():
                customer = Customer.objects.create(openid=session.openid, unionid=session.unionid, nickname="微信用户")
                login_hooks.login_hooks_run(customer=customer, scene=scene, first=True)
            first = True
        except IntegrityError:  # a concurrent first login of the same openid created it
            customer = Customer.objects.get(openid=session.openid)
    if not first:
        login_hooks.login_hooks_run(customer=customer, scene=scene, first=False)
    if not customer.is_active:
        raise LoginCodeInvalid("该账号已停用。")
    token = tokens.token_issue(customer_id=customer.pk)
    # Staff may have deactivated the customer (and revoked their tokens) between the read above
    # and the token's write: read again now that the token is listed, and take it back.
    if not Customer.objects.filter(pk=customer.pk, is_active=True).exists():
        tokens.token_revoke(token)
        raise LoginCodeInvalid("该账号已停用。")
    return LoginResult(customer=customer, token=token)


def customer_logout(*, token: str) -> None:
    """Revoke the token: the next request with it gets 401."""
    tokens.token_revoke(token)


@transaction.atomic(savepoint=False)
def customers_deactivate(*, customer_ids: list[int]) -> int:
    """Staff: deactivate these customers (``is_active`` true -> false, conditional UPDATE);
    returns how many changed. Their token revocations are recorded in the same transaction
    and tried after commit (``apps.accounts.revocations``): their next request is 401, also
    at the sold-out gate. A deactivation by plain SQL is found by beat's revocation sweep."""
    ids = list(Customer.objects.filter(pk__in=customer_ids, is_active=True).values_list("pk", flat=True))
    changed = Customer.objects.filter(pk__in=ids, is_active=True).update(is_active=False)
    now_inactive = Customer.objects.filter(pk__in=ids, is_active=False).values_list("pk", flat=True)
    revocations.token_revocations_record(customer_ids=list(now_inactive))
    return changed


def address_create(*, customer: Customer, **fields) -> Address:
    """Add an address; ``is_default=True`` (or a first address) makes it the only default.

    At most ``Address.MAX_PER_CUSTOMER`` (20) per customer, else LimitExceeded; the customer's
    row is locked first so that two adds cannot both pass the count.
    """
    from starmall.errors import LimitExceeded

    with transaction.atomic():
        customer_lock(customer_id=customer.pk)
        if customer.addresses.count() >= Address.MAX_PER_CUSTOMER:
            raise LimitExceeded(
                f"最多保存 {Address.MAX_PER_CUSTOMER} 个收货地址。", max_addresses=Address.MAX_PER_CUSTOMER
            )
        is_default = fields.pop("is_default", False) or not customer.addresses.exists()
        address_cards.card_refresh_after_commit(customer.pk)  # the flash-sale gate's copy
        if is_default:
            customer.addresses.filter(is_default=True).update(is_default=False)
        return Address.objects.create(customer=customer, is_default=is_default, **fields)
