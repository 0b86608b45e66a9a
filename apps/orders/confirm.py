"""Phase 1 of an order: :func:`order_confirm` prices a cart and stores it as a draft.

The draft (``apps.orders.drafts``) is kept in Redis under a fresh ``order_key`` and turned into
an order by ``apps.orders.create``. Nothing here writes to the database.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter

from django.conf import settings
from django.utils import timezone

from apps.accounts import address_cards
from apps.accounts import selectors as account_selectors
from apps.accounts.models import Customer
from apps.appointments import slots
from apps.appointments.exceptions import SlotUnavailable
from apps.appointments.models import Slot
from apps.catalog import soldout
from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Kind, Sku
from apps.marketing import bargains, coupons, flash_sales, group_buys
from apps.orders import caps, cart, drafts, flash_reservations, pickup
from apps.orders.exceptions import CouponUnavailable
from apps.shipping import selectors as freight
from starmall.errors import InvalidInput, NotFound

MAX_LINES = cart.MAX_LINES  # distinct SKUs in one order (the API's and the cart's limit)
MAX_QUANTITY = cart.MAX_QUANTITY  # units of one SKU
MAX_ORDER_FEN = 100_000_000  # 1,000,000 yuan: far below WeChat's int32 total_fee and our columns


def order_confirm(
    *,
    customer: Customer,
    items: list[dict] | None = None,
    cart_item_ids: list[int] | None = None,
    slot_id: int | None = None,
    address_id: int | None = None,
    coupon_id: int | None = None,
    use_points: int | bool = 0,
    flash_sale_id: int | None = None,
    delivery: str = "express",
    store_id: int | None = None,
    group_buy_id: int | None = None,
    group_id: int | None = None,
    bargain_no: str | None = None,
) -> dict:
    """Price a cart and store it as a draft; return the draft with its ``order_key``.

    ``items``: ``[{"sku_id": int, "quantity": int}]``. A consultation order is one SKU of a
    consultation product, quantity 1, with ``slot_id`` of that product's teacher (bookable
    until ``BOOKING_MIN_NOTICE_MINUTES`` before it starts); a goods order is delivered to
    ``address_id``, or to the customer's default address when it is omitted (API.md
    Additions; the answer's ``address`` is the one used). ``use_points``: a number of points,
    or ``true`` for as many as the order can take. Amounts are fen; ``pay_fen`` never drops
    below 1 fen (WeChat's minimum). ``usable_coupons``: the customer's coupons that apply to
    this cart with the fen each takes off (capped at the goods total and so that 1 fen is left),
    best first; ``coupon_id`` must be one of them (else CouponUnavailable). ``flash_sale_id`` (秒杀): exactly one item, the sale's SKU,
    at the sale's price, no coupon (-> CouponUnavailable; points are allowed); the sale's rules
    are ``apps.marketing.flash_sales.flash_sale_check`` (invalid_state, limit_exceeded,
    insufficient_stock). ``group_buy_id`` (open a 拼团 group as its leader) or ``group_id`` (join
    one), or ``bargain_no`` (buy a 砍价 record): the same way, one item of the activity's SKU at
    its price (the record's current price), no coupon; the rules are
    ``apps.marketing.group_buys.group_check`` and ``apps.marketing.bargains.bargain_check``.
    ``cart_item_ids`` instead of ``items``: those of the customer's cart
    lines (another's or a gone line -> NotFound); the draft records them and create removes
    them (``apps.orders.cart``). Freight: ``apps.shipping`` for the address's province and
    city (consultations: none). ``delivery="pickup"`` with ``store_id`` (自提, goods only): no
    address, no freight, the store kept in the draft (``apps.orders.pickup.pickup_store_choose``;
    unknown store -> InvalidInput ``detail.store_id``). Raises InvalidInput (no address: ``detail.address_id``),
    NotFound, InsufficientStock, SlotUnavailable, CouponUnavailable, LimitExceeded (caps,
    flash-sale limit), InvalidState. Writes nothing to the database. The answer is the stored
    draft's dict (``apps.orders.drafts.OrderDraft.to_json``).
    """
    quantities, cart_items = _items_resolve(customer, items, cart_item_ids)
    _soldout_refuse(quantities, flash_sale_id)
    _one_promotion_check(
        flash_sale_id=flash_sale_id, group_buy_id=group_buy_id, group_id=group_id, bargain_no=bargain_no
    )
    sale = _flash_sale_apply(customer, flash_sale_id, coupon_id, quantities)
    promo = _group_or_bargain_apply(
        customer, coupon_id, quantities, group_buy_id=group_buy_id, group_id=group_id, bargain_no=bargain_no
    )
    lines, skus = _lines_resolve(quantities, sale or promo)
    kind = _kind_of(lines, skus)
    caps.caps_check(customer_id=customer.pk, kind=kind)
    pickup_store = pickup.pickup_store_choose(kind=kind, delivery=delivery, store_id=store_id)
    slot_data, address = (
        (None, None) if pickup_store else _destination_choose(customer, kind, lines, skus, slot_id, address_id)
    )
    if sale is not None and address is not None and address.is_default:
        address_cards.card_offer(address)  # the next 秒杀 confirm is decided in front of Django
    goods_fen = sum(line.amount_fen for line in lines)
    freight_fen = _freight_quote(lines, skus, address) if address is not None else 0
    _total_check(goods_fen + freight_fen)
    usable, coupon_fen = _coupon_choose(customer, sale or promo, lines, goods_fen, freight_fen, coupon_id)
    points_used, points_fen = _points_apply(customer, use_points, goods_fen + freight_fen - coupon_fen - 1)
    return _draft_store(
        drafts.OrderDraft(
            order_key=drafts.draft_new_key(),
            customer_id=customer.pk,
            kind=kind,
            expires_at=timezone.localtime(
                timezone.now() + dt.timedelta(seconds=settings.ORDER_DRAFT_TTL_SECONDS)
            ).isoformat(),
            lines=lines,
            goods_fen=goods_fen,
            freight_fen=freight_fen,
            coupon_id=coupon_id,
            coupon_fen=coupon_fen,
            points_used=points_used,
            points_fen=points_fen,
            pay_fen=goods_fen + freight_fen - coupon_fen - points_fen,
            slot=slot_data,
            address={"id": address.pk, **address.snapshot()} if address else None,
            flash_sale_id=sale.pk if sale else None,
            cart_items=cart_items,
            usable_coupons=usable,
            pickup_store=pickup_store,
            group_buy_id=group_buy_id,
            group_id=group_id,
            bargain_no=bargain_no,
        ),
        sale,
    )


def _items_resolve(
    customer: Customer, items: list[dict] | None, cart_item_ids: list[int] | None
) -> tuple[Counter, list[list[int]] | None]:
    """``({sku_id: quantity}, cart lines bought or None)`` from ``items`` or the customer's cart
    lines ``cart_item_ids``; 1..MAX_LINES distinct SKUs (else InvalidInput)."""
    cart_items = None
    if cart_item_ids is not None:
        items, cart_items = cart.cart_items_for_confirm(customer_id=customer.pk, item_ids=cart_item_ids)
    quantities = Counter()
    for item in items:
        quantities[item["sku_id"]] += item["quantity"]
    if not quantities or len(quantities) > MAX_LINES:
        raise InvalidInput("商品种类数量不正确。", items=[f"请选择 1 到 {MAX_LINES} 种商品"])
    return quantities, cart_items


def _soldout_refuse(quantities: Counter, flash_sale_id: int | None) -> None:
    """A flash sale's losers: answered from Redis flags before any database work."""
    refused = soldout.refusal(soldout.flagged(soldout.keys_for(quantities, flash_sale_id)), quantities, flash_sale_id)
    if refused is not None:
        raise refused


def _flash_sale_apply(customer: Customer, flash_sale_id: int | None, coupon_id: int | None, quantities: Counter):
    """The live flash sale the cart buys in, or None. 秒杀: the sale's price is final, no coupon
    on top of it (CouponUnavailable); the sale's own rules raise from ``flash_sale_check``."""
    if flash_sale_id is None:
        return None
    if coupon_id is not None:
        raise CouponUnavailable("秒杀商品不能使用优惠券。", coupon_id=coupon_id)
    return flash_sales.flash_sale_check(sale_id=flash_sale_id, customer_id=customer.pk, quantities=quantities)


def _one_promotion_check(**chosen) -> None:
    """At most one of flash_sale_id, group_buy_id, group_id, bargain_no (else InvalidInput)."""
    named = [name for name, value in chosen.items() if value is not None]
    if len(named) > 1:
        raise InvalidInput("一笔订单只能参加一种活动。", **{named[1]: ["秒杀、拼团、砍价只能选一种"]})


def _group_or_bargain_apply(
    customer: Customer,
    coupon_id: int | None,
    quantities: Counter,
    *,
    group_buy_id: int | None,
    group_id: int | None,
    bargain_no: str | None,
):
    """The 拼团 activity or 砍价 record the cart buys in (its ``price_fen`` is the price), or
    None; no coupon on top (CouponUnavailable); the rules raise from marketing's checks."""
    if group_buy_id is None and group_id is None and bargain_no is None:
        return None
    if coupon_id is not None:
        raise CouponUnavailable("活动商品不能使用优惠券。", coupon_id=coupon_id)
    if bargain_no is not None:
        return bargains.bargain_check(bargain_no=bargain_no, customer_id=customer.pk, quantities=quantities)
    return group_buys.group_check(
        customer_id=customer.pk, quantities=quantities, group_buy_id=group_buy_id, group_id=group_id
    )


def _lines_resolve(quantities: Counter, sale) -> tuple[list[drafts.DraftLine], dict[int, Sku]]:
    """The priced lines (at the sale's price in a 秒杀) and the SKUs by id, checked one SKU at a
    time in the cart's order: on sale (NotFound), at most MAX_QUANTITY (InvalidInput), in stock
    (InsufficientStock; committed stock seen at 0 raises the sold-out flag)."""
    skus = {s.pk: s for s in Sku.objects.select_related("product").filter(pk__in=quantities)}
    lines = []
    for sku_id, quantity in quantities.items():
        sku = skus.get(sku_id)
        if sku is None or not sku.is_active or not sku.product.is_active:
            raise NotFound("该商品已下架。", sku_id=sku_id)
        if quantity > MAX_QUANTITY:
            raise InvalidInput("购买数量过多。", items=[f"每种商品最多购买 {MAX_QUANTITY} 件"])
        if sku.stock < quantity:
            if sku.stock == 0:
                soldout.mark(soldout.sku_key(sku_id))  # committed stock seen at 0
            raise InsufficientStock(sku_id=sku_id, requested=quantity, available=sku.stock)
        price_fen = sale.price_fen if sale else sku.price_fen
        lines.append(
            drafts.DraftLine(
                sku_id=sku.pk,
                product_id=sku.product_id,
                name=sku.product.name,
                specs=sku.specs,
                price_fen=price_fen,
                quantity=quantity,
                amount_fen=price_fen * quantity,
            )
        )
    return lines, skus


def _kind_of(lines: list[drafts.DraftLine], skus: dict[int, Sku]) -> str:
    """The one kind of the lines' products; goods and consultations mixed -> InvalidInput."""
    kinds = {skus[line.sku_id].product.kind for line in lines}
    if len(kinds) != 1:
        raise InvalidInput("商品和咨询服务需分开下单。", items=["商品和咨询服务需分开下单"])
    return kinds.pop()


def _destination_choose(
    customer: Customer,
    kind: str,
    lines: list[drafts.DraftLine],
    skus: dict[int, Sku],
    slot_id: int | None,
    address_id: int | None,
):
    """``(slot dict, None)`` for a consultation (:func:`_slot_check`); ``(None, address)`` for
    goods: ``address_id`` of the customer's, else the default one (InvalidInput when none)."""
    if kind == Kind.CONSULTATION:
        return _slot_check(lines, skus, slot_id), None
    if slot_id is not None:
        raise InvalidInput("只有咨询订单需要选择时段。", slot_id=["只有咨询订单需要选择时段"])
    if address_id is None:
        address = account_selectors.address_default(customer=customer)
        if address is None:
            raise InvalidInput("请先添加收货地址。", address_id=["请先添加收货地址"])
    else:
        address = account_selectors.address_get(customer=customer, address_id=address_id)
        if address is None:
            raise InvalidInput("收货地址不存在，请重新选择。", address_id=["请选择您自己的收货地址"])
    return None, address


def _total_check(total_fen: int) -> None:
    """Goods plus freight (fen) between 1 fen (WeChat's minimum) and MAX_ORDER_FEN."""
    if total_fen < 1:
        raise InvalidInput("订单金额至少为 0.01 元。", items=["订单金额至少为 0.01 元（微信支付的最低金额）"])
    if total_fen > MAX_ORDER_FEN:
        raise InvalidInput("订单金额过大。", items=[f"单笔订单最多 {MAX_ORDER_FEN // 100} 元"])


def _coupon_choose(
    customer: Customer, sale, lines: list[drafts.DraftLine], goods_fen: int, freight_fen: int, coupon_id: int | None
) -> tuple[list[dict], int]:
    """``(usable coupons, fen the chosen one takes off)``. Coupons (apps.marketing.coupons): what
    each usable one takes off THIS cart, best first; never more than the goods, and at least 1
    fen is left to pay. None in a 秒杀. A ``coupon_id`` not among them -> CouponUnavailable."""
    usable = (
        []
        if sale
        else [
            {**c, "discount_fen": max(0, min(c["discount_fen"], goods_fen, goods_fen + freight_fen - 1))}
            for c in coupons.coupons_for_cart(customer_id=customer.pk, lines=[line.to_json() for line in lines])
        ]
    )
    usable = [c for c in usable if c["discount_fen"] > 0]
    if coupon_id is None:
        return usable, 0
    chosen = next((c for c in usable if c["id"] == coupon_id), None)
    if chosen is None:
        raise CouponUnavailable(coupon_id=coupon_id)
    return usable, chosen["discount_fen"]


def _draft_store(draft: drafts.OrderDraft, sale=None) -> dict:
    """Save the draft in Redis under its key; return its dict (confirm's answer). A 秒杀's
    draft is a reservation on the sale's Redis quota (``flash_reservations.draft_reserve``:
    sold out, over the limit or not live there raise as ``flash_sale_check`` does)."""
    data = draft.to_json()
    if sale is not None:
        return flash_reservations.draft_reserve(data, sale)
    drafts.draft_save(draft.order_key, data)
    return data


def _freight_quote(lines: list[drafts.DraftLine], skus: dict[int, Sku], address) -> int:
    """Freight in fen for the goods ``lines`` to ``address`` (each product's freight template,
    the default for products without one; rule: ``apps.shipping.calculator.freight_quote``)."""
    return freight.freight_for_lines(
        lines=[
            {
                "template_id": skus[line.sku_id].product.freight_template_id,
                "quantity": line.quantity,
                "weight_g": skus[line.sku_id].weight_g,
                "volume_cm3": skus[line.sku_id].volume_cm3,
                "amount_fen": line.amount_fen,
            }
            for line in lines
        ],
        province=address.province,
        city=address.city,
    )


def _slot_check(lines: list[drafts.DraftLine], skus: dict[int, Sku], slot_id: int | None) -> dict:
    """The consultation's slot (:func:`slot_json`): one line of quantity 1, a slot of the
    product's teacher, still available and bookable (else InvalidInput / SlotUnavailable)."""
    if len(lines) != 1 or lines[0].quantity != 1:
        raise InvalidInput("咨询订单只能预约一个时段。", items=["咨询订单只能包含一项服务，数量为 1"])
    if slot_id is None:
        raise InvalidInput("请选择咨询时段。", slot_id=["请选择咨询时段"])
    teacher = getattr(skus[lines[0].sku_id].product, "teacher", None)
    slot = Slot.objects.select_related("teacher").filter(pk=slot_id).first()
    if slot is None or teacher is None or slot.teacher_id != teacher.pk:
        raise SlotUnavailable("该时段不属于此咨询服务。", slot_id=slot_id)
    if not slot.available:
        raise SlotUnavailable(slot_id=slot_id)
    if slot.start <= slots.booking_open_after():
        raise SlotUnavailable(
            f"该时段已截止预约（需提前 {settings.BOOKING_MIN_NOTICE_MINUTES} 分钟预约）。", slot_id=slot_id
        )
    return slot_json(slot)


def slot_json(slot: Slot) -> dict:
    """The slot as shown in drafts and orders (times ISO 8601, Shanghai offset)."""
    return {
        "id": slot.pk,
        "teacher_id": slot.teacher_id,
        "teacher_name": slot.teacher.name,
        "start": timezone.localtime(slot.start).isoformat(),
        "end": timezone.localtime(slot.end).isoformat(),
    }


def _points_apply(customer: Customer, use_points: int | bool, max_fen: int) -> tuple[int, int]:
    """(points used, fen they are worth), capped by the customer's points and ``max_fen``."""
    value = settings.POINT_VALUE_FEN
    if use_points is True:
        wanted = customer.points
    elif use_points is False or not use_points:
        return 0, 0
    else:
        wanted = int(use_points)
        if wanted > customer.points:
            raise InvalidInput("积分不足。", use_points=[f"您只有 {customer.points} 积分可用"])
    used = max(0, min(wanted, max_fen // value))
    return used, used * value
