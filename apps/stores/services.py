"""Pickup verification (自提核销): a store's staff take the customer's code and hand the goods over.

:func:`pickup_verify` is THE verification: the back office's page and ``manage.py
pickup_verify CODE --by USERNAME`` both call it, with the same permission checks and the same
per-staff throttle of wrong codes (``apps.stores.verify_throttle``). The order's
state change is ``apps.orders.services.order_mark_picked_up`` — a conditional UPDATE
``paid -> completed`` that only one of two staff verifying at once can win; the loser reads the
winner's verification and is refused with its time and staff.
"""

from __future__ import annotations

import datetime as dt
import re

from django.db import transaction
from django.utils import timezone

from apps.orders import services as order_services
from apps.orders.models import Delivery, Order, OrderStatus, pickup_code_masked
from apps.stores import selectors, verify_throttle
from apps.stores.exceptions import AlreadyVerified, Forbidden
from apps.stores.models import PickupVerification, PickupVerifyFailure
from starmall.errors import InvalidInput, InvalidState, NotFound

CODE = re.compile(r"[0-9]{8}")
PERMISSION = "stores.verify_pickup"


def pickup_verify(*, code: str, user, now: dt.datetime | None = None) -> Order:
    """Verify a pickup ``code`` (8 digits; spaces ignored) as staff ``user``; return the order,
    now ``completed`` with ``pickup_verified_at``/``pickup_verified_by``.

    ``user`` needs ``stores.verify_pickup`` and must work at the order's store (a superuser: any); checks
    are throttled per login (``apps.stores.verify_throttle``), an unknown code or another store's counting
    as wrong. Raises InvalidInput (not 8 digits), Forbidden (no permission, no store, another store's order),
    VerifyThrottled (``PICKUP_VERIFY_FAILURES_PER_HOUR`` wrong codes this hour), NotFound (unknown code),
    AlreadyVerified (the message gives when, ``YYYY-MM-DD HH:MM`` Beijing time, and who; detail ``verified_at``,
    ``verified_by``), InvalidState (not paid, e.g. refunding or refunded, or a refund request waiting).
    """
    code = re.sub(r"\s+", "", code or "")
    if not CODE.fullmatch(code):
        raise InvalidInput("核销码为 8 位数字。", code=["请输入 8 位数字核销码"])
    if not (user.is_active and user.has_perm(PERMISSION)):
        raise Forbidden("您没有核销自提订单的权限。")
    store_id = selectors.staff_store_id(user)
    if store_id is None and not user.is_superuser:
        raise Forbidden("您的账号未绑定门店。")
    with verify_throttle.check(user=user, now=now or timezone.now()) as check:
        order = _order_of_code(code)
        if order is None:
            check.wrong(code=code, store_id=store_id, reason=PickupVerifyFailure.Reason.NOT_FOUND)
            raise NotFound("核销码不存在。")
        if store_id is not None and order.pickup_store_id != store_id:
            check.wrong(code=code, store_id=store_id, reason=PickupVerifyFailure.Reason.OTHER_STORE)
            raise Forbidden("该订单不在您的门店自提。", store=(order.pickup_store or {}).get("name", ""))
        return _hand_over(order=order, code=code, user=user)


def _hand_over(*, order: Order, code: str, user) -> Order:
    """Complete ``order`` as verified by ``user`` and log it (the code masked); the refusals of
    :func:`pickup_verify` for an order verified before or not paid."""
    _refuse_if_verified(order)
    if order.status != OrderStatus.PAID:
        raise InvalidState(f"订单当前状态为「{order.get_status_display()}」，不能核销。", status=order.status)
    with transaction.atomic():
        if order_services.order_mark_picked_up(
            order=order, actor=f"staff:{user.get_username()}", verifier=user.get_username()
        ):
            PickupVerification.objects.create(
                order=order,
                store_id=order.pickup_store_id,
                code=pickup_code_masked(code),
                verified_by=user,
                verified_at=order.pickup_verified_at,
            )
            return order
    order.refresh_from_db()  # lost the race, or the order changed under us
    _refuse_if_verified(order)
    raise InvalidState(f"订单当前状态为「{order.get_status_display()}」，不能核销。", status=order.status)


def _order_of_code(code: str) -> Order | None:
    """The pickup order with ``code``: the one that can still be collected (UNIQUE among
    those), else the latest verified one (so a second verification is told when), else None."""
    qs = Order.objects.filter(delivery=Delivery.PICKUP, pickup_code=code)
    return (
        qs.filter(status__in=(OrderStatus.PAID, OrderStatus.REFUNDING)).first()
        or qs.filter(pickup_verified_at__isnull=False).order_by("-pickup_verified_at").first()
        or qs.order_by("-id").first()
    )


def _refuse_if_verified(order: Order) -> None:
    if order.pickup_verified_at is not None:
        when = timezone.localtime(order.pickup_verified_at).strftime("%Y-%m-%d %H:%M")
        raise AlreadyVerified(
            f"该核销码已于 {when} 由 {order.pickup_verified_by} 核销，不能重复核销。",
            verified_at=when,
            verified_by=order.pickup_verified_by,
            order_no=order.order_no,
        )
