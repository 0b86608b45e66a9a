"""Order drafts (phase 1 of the two-phase order) kept in Redis under their ``order_key``.

A draft is the priced cart the customer saw at confirm. It lives ``ORDER_DRAFT_TTL_SECONDS``
and is deleted after the order that consumed it commits (never before: a failed create leaves
it, so the customer can retry the same key). In code it is an :class:`OrderDraft` (lines:
:class:`DraftLine`); in Redis the plain dict of :meth:`OrderDraft.to_json`, which confirm also
answers (``ConfirmOutSerializer``). A draft the previous release wrote must be read by this one,
and the other way round: change that shape only in a way both releases read.
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from typing import Any, TypedDict

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from starmall.errors import InvalidInput

MAX_ORDER_FEN = 100_000_000  # 1,000,000 yuan: far below WeChat's int32 total_fee and our columns


class DraftSlot(TypedDict):
    """A consultation's slot as shown at confirm (``apps.appointments.selectors.slot_json``)."""

    id: int | None  # None when confirmed by ``start``: create books the start
    teacher_id: int
    teacher_name: str
    start: str  # ISO 8601, Asia/Shanghai offset
    end: str  # ISO 8601, Asia/Shanghai offset


class UsableCoupon(TypedDict):
    """One of the customer's coupons that applies to the draft's cart."""

    id: int
    name: str
    discount_fen: int  # fen it takes off THIS cart (capped at the goods, 1 fen left to pay)


@dataclass
class DraftLine:
    """One priced line of a draft: a SKU and how many of it, at the price shown at confirm."""

    sku_id: int
    product_id: int
    name: str  # the product's name at confirm
    specs: Any  # the SKU's specs at confirm (its JSON field, as stored)
    price_fen: int  # unit price in fen (the 秒杀 price for a flash sale)
    quantity: int  # units, 1..MAX_QUANTITY
    amount_fen: int  # price_fen * quantity, fen

    def to_json(self) -> dict:
        """The line as stored in Redis and answered by confirm (keys in this order)."""
        return {
            "sku_id": self.sku_id,
            "product_id": self.product_id,
            "name": self.name,
            "specs": self.specs,
            "price_fen": self.price_fen,
            "quantity": self.quantity,
            "amount_fen": self.amount_fen,
        }

    @classmethod
    def priced(cls, *, sku_id: int, product_id: int, name: str, specs: Any, price_fen: int, quantity: int) -> DraftLine:
        """The line of ``quantity`` units at ``price_fen`` each (its amount: their product, fen)."""
        return cls(
            sku_id=sku_id,
            product_id=product_id,
            name=name,
            specs=specs,
            price_fen=price_fen,
            quantity=quantity,
            amount_fen=price_fen * quantity,
        )

    @classmethod
    def from_json(cls, data: dict) -> DraftLine:
        """The line from its stored dict (:meth:`to_json`)."""
        return cls(
            sku_id=data["sku_id"],
            product_id=data["product_id"],
            name=data["name"],
            specs=data["specs"],
            price_fen=data["price_fen"],
            quantity=data["quantity"],
            amount_fen=data["amount_fen"],
        )


@dataclass
class OrderDraft:
    """A priced cart waiting for ``order_create``. Money is integer fen.

    ``pay_fen = goods_fen + freight_fen - coupon_fen - points_fen - member_fen`` and is at least 1 fen.
    """

    order_key: str  # 32 hex characters (:func:`draft_new_key`); the order's UNIQUE key
    customer_id: int  # the customer who confirmed; another customer's key is "expired"
    kind: str  # ``Kind.GOODS`` or ``Kind.CONSULTATION`` (one kind per order)
    expires_at: str  # ISO 8601, Asia/Shanghai offset: confirm + ORDER_DRAFT_TTL_SECONDS
    lines: list[DraftLine]  # one per SKU, in the order the customer listed them
    goods_fen: int  # sum of the lines' amount_fen
    freight_fen: int  # apps.shipping's quote for the address (consultations: 0)
    coupon_id: int | None  # the chosen coupon, one of usable_coupons, or None
    coupon_fen: int  # what the chosen coupon takes off (0 without one)
    points_used: int  # points create spends
    points_fen: int  # what they are worth: points_used * POINT_VALUE_FEN
    pay_fen: int  # what the customer pays
    slot: DraftSlot | None  # a consultation's slot; None for goods
    address: dict | None  # goods: ``{"id", **Address.snapshot()}``; None for a consultation
    flash_sale_id: int | None  # the 秒杀 the order buys in, or None
    cart_items: list[list[int]] | None  # ``[[cart_item_id, quantity], ...]`` create removes, or None
    usable_coupons: list[UsableCoupon]  # the customer's coupons for this cart, best first
    # Self-pickup: the store as the order keeps it (apps.orders.pickup); None = delivered to
    # ``address``. Stored only when set, so an express draft keeps the previous release's shape.
    pickup_store: dict | None = None
    group_buy_id: int | None = None  # 拼团: open a new group of this activity as its leader
    group_id: int | None = None  # 拼团: join this group
    bargain_no: str | None = None  # 砍价: buy this record at its current price
    member_fen: int = 0  # fen: the level discount on goods at their own price (apps.members.pricing); stored when set

    @property
    def slot_id(self) -> int | None:
        """The consultation's slot id, or None for goods."""
        return self.slot["id"] if self.slot else None

    @property
    def slot_start(self) -> dt.datetime | None:
        """When the consultation's slot starts (aware, Shanghai offset), or None for goods."""
        return dt.datetime.fromisoformat(self.slot["start"]) if self.slot else None

    @property
    def units(self) -> int:
        """Units in all lines together."""
        return sum(line.quantity for line in self.lines)

    @property
    def quantities(self) -> dict[int, int]:
        """``{sku_id: quantity}`` of the lines."""
        return {line.sku_id: line.quantity for line in self.lines}

    def to_json(self) -> dict:
        """The draft as stored in Redis and answered by confirm (keys in exactly this order). The
        拼团/砍价 keys and ``member_fen`` are written only when set: an ordinary draft keeps the
        previous shape."""
        data = {
            "order_key": self.order_key,
            "customer_id": self.customer_id,
            "kind": self.kind,
            "expires_at": self.expires_at,
            "lines": [line.to_json() for line in self.lines],
            "goods_fen": self.goods_fen,
            "freight_fen": self.freight_fen,
            "coupon_id": self.coupon_id,
            "coupon_fen": self.coupon_fen,
            "points_used": self.points_used,
            "points_fen": self.points_fen,
            **({"member_fen": self.member_fen} if self.member_fen else {}),
            "pay_fen": self.pay_fen,
            "slot": self.slot,
            "address": self.address,
            "flash_sale_id": self.flash_sale_id,
            "cart_items": self.cart_items,
            "usable_coupons": self.usable_coupons,
            **({"pickup_store": self.pickup_store} if self.pickup_store else {}),
        }
        for name in ("group_buy_id", "group_id", "bargain_no"):
            if getattr(self, name) is not None:
                data[name] = getattr(self, name)
        return data

    @classmethod
    def from_json(cls, data: dict) -> OrderDraft:
        """The draft from its stored dict (:meth:`to_json`). ``flash_sale_id``, ``cart_items``
        and ``usable_coupons`` may be missing in drafts older than those features (None, None,
        [])."""
        return cls(
            order_key=data["order_key"],
            customer_id=data["customer_id"],
            kind=data["kind"],
            expires_at=data["expires_at"],
            lines=[DraftLine.from_json(line) for line in data["lines"]],
            goods_fen=data["goods_fen"],
            freight_fen=data["freight_fen"],
            coupon_id=data["coupon_id"],
            coupon_fen=data["coupon_fen"],
            points_used=data["points_used"],
            points_fen=data["points_fen"],
            pay_fen=data["pay_fen"],
            slot=data["slot"],
            address=data["address"],
            flash_sale_id=data.get("flash_sale_id"),
            cart_items=data.get("cart_items"),
            usable_coupons=data.get("usable_coupons", []),
            pickup_store=data.get("pickup_store"),
            group_buy_id=data.get("group_buy_id"),
            group_id=data.get("group_id"),
            bargain_no=data.get("bargain_no"),
            member_fen=data.get("member_fen", 0),
        )


def total_check(total_fen: int) -> None:
    """Goods plus freight (fen) between 1 fen (WeChat's minimum) and MAX_ORDER_FEN, else InvalidInput."""
    if total_fen < 1:
        raise InvalidInput("订单金额至少为 0.01 元。", items=["订单金额至少为 0.01 元（微信支付的最低金额）"])
    if total_fen > MAX_ORDER_FEN:
        raise InvalidInput("订单金额过大。", items=[f"单笔订单最多 {MAX_ORDER_FEN // 100} 元"])


def draft_build(
    *,
    customer_id: int,
    kind: str,
    lines: list[DraftLine],
    freight_fen: int,
    address: dict | None,
    now: dt.datetime,
    coupon_id: int | None = None,
    coupon_fen: int = 0,
    points_used: int = 0,
    points_fen: int = 0,
    slot: DraftSlot | None = None,
    flash_sale_id: int | None = None,
    cart_items: list[list[int]] | None = None,
    usable_coupons: list[UsableCoupon] | tuple = (),
    pickup_store: dict | None = None,
    group_buy_id: int | None = None,
    group_id: int | None = None,
    bargain_no: str | None = None,
    member_fen: int = 0,
) -> OrderDraft:
    """A new draft (fresh ``order_key``) of priced ``lines``: the goods total, what is left to pay
    after ``member_fen``, ``coupon_fen`` and ``points_fen``, expiring ``ORDER_DRAFT_TTL_SECONDS`` after ``now``
    (Shanghai offset). Goods plus freight outside 1 fen .. MAX_ORDER_FEN -> InvalidInput
    (:func:`total_check`). The one builder of both confirms: Django's ``order_confirm`` and the
    gate's ``starmall.gates.flash_confirm``."""
    goods_fen = sum(line.amount_fen for line in lines)
    total_check(goods_fen + freight_fen)
    return OrderDraft(
        order_key=draft_new_key(),
        customer_id=customer_id,
        kind=kind,
        expires_at=timezone.localtime(now + dt.timedelta(seconds=settings.ORDER_DRAFT_TTL_SECONDS)).isoformat(),
        lines=list(lines),
        goods_fen=goods_fen,
        freight_fen=freight_fen,
        coupon_id=coupon_id,
        coupon_fen=coupon_fen,
        points_used=points_used,
        points_fen=points_fen,
        pay_fen=goods_fen + freight_fen - coupon_fen - points_fen - member_fen,
        slot=slot,
        address=address,
        flash_sale_id=flash_sale_id,
        cart_items=cart_items,
        usable_coupons=list(usable_coupons),
        pickup_store=pickup_store,
        group_buy_id=group_buy_id,
        group_id=group_id,
        bargain_no=bargain_no,
        member_fen=member_fen,
    )


def draft_key(order_key: str) -> str:
    """The draft's cache key (before the cache's KEY_PREFIX); the flash-sale quota's script
    writes drafts under it too (``apps.orders.flash_reservations``)."""
    return f"order:draft:{order_key}"


_key = draft_key


def draft_new_key() -> str:
    """A fresh, unguessable order_key (32 hex characters)."""
    return secrets.token_hex(16)


def draft_save(order_key: str, draft: dict) -> None:
    """Store the draft (its :meth:`OrderDraft.to_json` dict) for ``ORDER_DRAFT_TTL_SECONDS``."""
    cache.set(_key(order_key), draft, timeout=settings.ORDER_DRAFT_TTL_SECONDS)


def draft_get(order_key: str) -> dict | None:
    """The stored draft dict (:meth:`OrderDraft.to_json`), or None when it expired or never existed."""
    return cache.get(_key(order_key))


def draft_delete(order_key: str) -> None:
    """Drop the draft (after the order made from it committed)."""
    cache.delete(_key(order_key))
