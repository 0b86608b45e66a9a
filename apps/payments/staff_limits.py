"""Staff money limits, checked inside the services every caller goes through (the back office,
``manage.py`` commands, any staff API), never only by hiding a button. A refusal is
:class:`StaffForbidden` (403 ``forbidden``), its Chinese message naming the roles that may.

* Refund approval: ``orders.decide_aftersale`` (财务) any amount; ``orders.approve_small_refund``
  (客服) up to ``SERVICE_REFUND_LIMIT_FEN`` fen, that amount included.
* 改价: ``orders.change_price`` (财务) any amount; ``orders.change_price_limited`` (运营) while the
  order's total adjustment (``adjust_fen`` after the change, either way) stays within
  ``OPS_PRICE_CHANGE_PERCENT`` % of ``goods_fen``, so repeated small changes cannot add up past it.
"""

from __future__ import annotations

from django.conf import settings

from starmall.admin_money import yuan
from starmall.errors import ShopError
from starmall.staff_roles import roles_text

REFUND_ANY = "orders.decide_aftersale"
REFUND_LIMITED = "orders.approve_small_refund"
PRICE_ANY = "orders.change_price"
PRICE_LIMITED = "orders.change_price_limited"


class StaffForbidden(ShopError):
    """The staff user may not do this (no permission, or above their limit): 403 ``forbidden``."""

    code = "forbidden"
    status = 403
    message = "没有此操作的权限。"


def _active(user) -> bool:
    return user is not None and user.is_active


def may_approve_refund(user) -> bool:
    """``user`` may approve some refund request (any amount or up to the limit)."""
    return _active(user) and (user.has_perm(REFUND_ANY) or user.has_perm(REFUND_LIMITED))


def refund_approval_check(*, user, amount_fen: int) -> None:
    """Raise StaffForbidden unless ``user`` may approve a refund of ``amount_fen`` fen."""
    if _active(user) and user.has_perm(REFUND_ANY):
        return
    if not may_approve_refund(user):
        raise StaffForbidden(f"没有同意退款的权限，需{roles_text(REFUND_ANY)}审核。")
    limit = settings.SERVICE_REFUND_LIMIT_FEN
    if amount_fen > limit:
        raise StaffForbidden(f"超过 ¥{yuan(limit)} 的退款需{roles_text(REFUND_ANY)}审核。")


def may_change_price(user) -> bool:
    """``user`` may 改价 some unpaid order (any amount or within the percentage)."""
    return _active(user) and (user.has_perm(PRICE_ANY) or user.has_perm(PRICE_LIMITED))


def price_limit_fen(goods_fen: int) -> int:
    """The largest total adjustment (either way) the limited role may set: ``OPS_PRICE_CHANGE_PERCENT``
    % of ``goods_fen``, rounded down to the fen."""
    return goods_fen * settings.OPS_PRICE_CHANGE_PERCENT // 100


def require_price_change(user) -> None:
    """Raise StaffForbidden unless ``user`` may 改价 at all (the amount is checked later)."""
    if not may_change_price(user):
        raise StaffForbidden(f"没有改价的权限，需{roles_text(PRICE_ANY)}操作。")


def price_change_check(*, user, goods_fen: int, adjust_fen: int) -> None:
    """Raise StaffForbidden unless ``user`` may set an order of ``goods_fen`` to a total
    adjustment of ``adjust_fen`` fen (negative: cheaper)."""
    require_price_change(user)
    if user.has_perm(PRICE_ANY):
        return
    limit = price_limit_fen(goods_fen)
    if abs(adjust_fen) > limit:
        raise StaffForbidden(
            f"改价超过商品金额的 ±{settings.OPS_PRICE_CHANGE_PERCENT} %（¥{yuan(limit)}），需{roles_text(PRICE_ANY)}操作。"
        )
