"""Pickup verification (自提核销): a store's staff take the customer's code and hand the goods over.

:func:`pickup_verify` is THE verification: the back office's page and ``manage.py
pickup_verify CODE --by USERNAME`` both call it, with the same permission checks. The order's
state change is ``apps.orders.services.order_mark_picked_up`` — a conditional UPDATE
``paid -> completed`` that only one of two staff verifying at once can win; the loser reads the
winner's verification and is refused with its time and staff.
"""

from __future__ import annotations

import re

from django.db import transaction
from django.utils import timezone

from apps.orders import services as order_services
from apps.orders.models import Delivery, Order, OrderStatus
from apps.stores import selectors
from apps.stores.exceptions import AlreadyVerified, Forbidden
from apps.stores.models import PickupVerification
from starmall.errors import InvalidInput, InvalidState, NotFound

CODE = re.compile(r"[0-9]{8}")
PERMISSION = "stores.verify_pickup"


def pickup_verify(*, code: str, user) -> Order:
    """Verify a pickup ``code`` (8 digits; spaces ignored) as staff ``user``; return the order,
    now ``completed`` with ``pickup_verified_at``/``pickup_verified_by``.

    ``user`` needs ``stores.verify_pickup`` and must work at the order's store (a superuser may
    verify at any store). Raises InvalidInput (not 8 digits), Forbidden (no permission, not a
    store's staff, another store's order), NotFound (no pickup order has the code),
    AlreadyVerified (verified before: the message gives ``YYYY-MM-DD HH:MM`` Beijing time and
    the staff; detail ``verified_at``, ``verified_by``), InvalidState (not paid, e.g. refunding
    or refunded, or a refund request waiting).
    """
    code = re.sub(r"\s+", "", code or "")
    if not CODE.fullmatch(code):
        raise InvalidInput("核销码为 8 位数字。", code=["请输入 8 位数字核销码"])
    if not (user.is_active and user.has_perm(PERMISSION)):
        raise Forbidden("您没有核销自提订单的权限。")
    store_id = selectors.staff_store_id(user)
    if store_id is None and not user.is_superuser:
        raise Forbidden("您的账号未绑定门店。")
    order = _order_of_code(code)
    if order is None:
        raise NotFound("核销码不存在。", code=code)
    if store_id is not None and order.pickup_store_id != store_id:
        raise Forbidden("该订单不在您的门店自提。", store=(order.pickup_store or {}).get("name", ""))
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
                code=code,
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
