"""Phase 1 of an order: :func:`order_confirm` prices a cart and stores it as a draft.

The draft (``apps.orders.drafts``) is kept in Redis under a fresh ``order_key`` and turned into
an order by ``apps.orders.create``. Nothing here writes to the database.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import NamedTuple

from django.conf import settings
from django.utils import timezone

from apps.accounts import address_cards
from apps.accounts.models import Address, Customer
from apps.appointments import availability, slots
from apps.catalog import soldout
from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Kind, Sku
from apps.marketing import bargains, coupons, flash_sales, group_buys
from apps.members import pricing
from apps.orders import caps, cart, confirm_reads, drafts, flash_reservations, pickup
from apps.orders.exceptions import CouponUnavailable
from apps.shipping import selectors as freight
from starmall.errors import InvalidInput, NotFound

MAX_LINES = cart.MAX_LINES  # distinct SKUs in one order (the API's and the cart's limit)
MAX_QUANTITY = cart.MAX_QUANTITY  # units of one SKU
MAX_ORDER_FEN = drafts.MAX_ORDER_FEN  # the largest goods + freight of one order, fen


class _Member(NamedTuple):
    """What the buyer's membership changes in a draft (``apps.members.pricing``)."""

    fen: int  # the level discount on goods at their own price (the draft's member_fen), fen
    free_freight: bool  # a paid member (SVIP) buying goods, activities included: express freight is free


NO_MEMBER = _Member(fen=0, free_freight=False)


class _Destination(NamedTuple):
    """Where the order goes: one of a consultation's slot, a delivery address, a pickup store."""

    slot: dict | None  # ``apps.appointments.selectors.slot_json``
    address: Address | None  # the customer's, for goods delivered
    pickup_store: dict | None  # ``pickup.pickup_store_choose``'s snapshot, for goods picked up


def order_confirm(*, customer: Customer, **request) -> dict:
    """Price a cart into a Redis draft (no database write; :func:`order_confirm_many` of one); return its dict.

    ``items``: ``[{"sku_id": int, "quantity": int}]``, or ``cart_item_ids`` (the customer's cart lines; create removes
    them). A consultation is one SKU, quantity 1, at ``start`` (aware, as availability lists it) or the legacy
    ``slot_id``. Goods go to ``address_id`` (else the default address), or with ``delivery="pickup"`` to ``store_id``
    (自提: no freight). ``coupon_id``: one of the answer's ``usable_coupons``; ``use_points``: a number, or ``true`` for
    all the order can take. At most one activity, one item at its price, no coupon: ``flash_sale_id`` (秒杀),
    ``group_buy_id`` / ``group_id`` (open / join a 拼团), ``bargain_no`` (砍价). All fen. Raises InvalidInput (``detail``
    names the field), NotFound, InsufficientStock, SlotUnavailable, CouponUnavailable, LimitExceeded, InvalidState.
    """
    result = order_confirm_many([(customer, request)])[0]
    if isinstance(result, Exception):
        raise result
    return result


def order_confirm_many(calls: list[tuple[Customer, dict]]) -> list:
    """Confirm ``[(customer, arguments of _confirm)]`` together: their reads are made once for all
    (``confirm_reads.BatchReads``; one call reads alone), each confirm priced by the same
    :func:`_confirm`. Returns, in order, each draft's dict or the exception it raised."""
    reads = confirm_reads.LoneReads() if len(calls) == 1 else confirm_reads.BatchReads(calls)
    results = []
    for customer, request in calls:
        try:
            results.append(_confirm(customer=customer, reads=reads, **request))
        except Exception as exc:  # noqa: BLE001 - handed back to its caller, each confirm alone
            results.append(exc)
    return results


def _confirm(
    *,
    customer: Customer,
    reads: confirm_reads.LoneReads,
    items: list[dict] | None = None,
    cart_item_ids: list[int] | None = None,
    slot_id: int | None = None,
    start: dt.datetime | None = None,
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
    """:func:`order_confirm` of one customer, with the batch's ``reads``."""
    activity = dict(flash_sale_id=flash_sale_id, group_buy_id=group_buy_id, group_id=group_id, bargain_no=bargain_no)
    quantities, cart_items = _items_resolve(customer, items, cart_item_ids)
    sale, promo = _activity_apply(customer, quantities, coupon_id, **activity)
    activity["flash_sale_id"] = sale.pk if sale else None  # the sale's own id, as the order keeps it
    lines, skus = _lines_resolve(quantities, sale or promo, customer_id=customer.pk, reads=reads)
    kind = _kind_of(lines, skus)
    terms = reads.terms(skus[lines[0].sku_id], customer_id=customer.pk)  # the buyer's, read with the SKUs
    lines, member = _member_apply(kind, lines, skus, terms, offer=sale or promo)
    caps.caps_check(kind=kind, unpaid=reads.unpaid(customer.pk))
    choice = dict(delivery=delivery, store_id=store_id, slot_id=slot_id, start=start, address_id=address_id)
    where = _destination_choose(customer, kind, lines, skus, reads, **choice)
    if sale is not None and where.address is not None and where.address.is_default:
        address_cards.card_offer(where.address)  # the next 秒杀 confirm is decided in front of Django
    draft = _draft_price(
        customer,
        kind,
        lines,
        skus,
        where,
        offer=sale or promo,
        coupon_id=coupon_id,
        use_points=use_points,
        cart_items=cart_items,
        activity=activity,
        member=member,
        reads=reads,
    )
    return _draft_store(draft, sale)


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


def _activity_apply(customer: Customer, quantities: Counter, coupon_id: int | None, **activity) -> tuple:
    """``(flash sale, 拼团 activity or 砍价 record)`` the cart buys in, either or both None, in
    this order: the sold-out flags (:func:`_soldout_refuse`), one activity at most
    (:func:`_one_promotion_check`), then the activity's own rules."""
    flash_sale_id = activity["flash_sale_id"]
    _soldout_refuse(quantities, flash_sale_id)
    _one_promotion_check(**activity)
    sale = _flash_sale_apply(customer, flash_sale_id, coupon_id, quantities)
    promo = _group_or_bargain_apply(
        customer,
        coupon_id,
        quantities,
        group_buy_id=activity["group_buy_id"],
        group_id=activity["group_id"],
        bargain_no=activity["bargain_no"],
    )
    return sale, promo


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


def _lines_resolve(
    quantities: Counter, sale, *, customer_id: int, reads: confirm_reads.LoneReads
) -> tuple[list[drafts.DraftLine], dict[int, Sku]]:
    """The priced lines (at the sale's price in a 秒杀) and the SKUs by id, checked one SKU at a
    time in the cart's order: on sale (NotFound), at most MAX_QUANTITY (InvalidInput), in stock
    (InsufficientStock; committed stock seen at 0 raises the sold-out flag). Each SKU carries
    the customer's member terms when read alone (``confirm_reads``)."""
    skus = reads.skus(quantities, customer_id=customer_id)
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
        lines.append(
            drafts.DraftLine.priced(
                sku_id=sku.pk,
                product_id=sku.product_id,
                name=sku.product.name,
                specs=sku.specs,
                price_fen=sale.price_fen if sale else sku.price_fen,
                quantity=quantity,
            )
        )
    return lines, skus


def _member_apply(
    kind: str, lines: list[drafts.DraftLine], skus: dict[int, Sku], terms: pricing.MemberTerms, *, offer
) -> tuple[list[drafts.DraftLine], _Member]:
    """``(lines, member)``: goods at their own price as the customer's member terms price them
    (``apps.members.pricing.line_price``: the SVIP member price as the line's price, or the
    level discount summed into ``member.fen``, the lower per line); goods in an ``offer`` (秒杀,
    拼团 or 砍价: its price is final) keep their lines. Free express freight while SVIP, offer
    or not. Consultations: unchanged, :data:`NO_MEMBER`."""
    if kind != Kind.GOODS:
        return lines, NO_MEMBER
    if offer is not None or not terms.any:
        return lines, _Member(fen=0, free_freight=terms.svip)
    priced, member_fen = [], 0
    for line in lines:
        member = pricing.line_price(
            price_fen=line.price_fen,
            member_price_fen=skus[line.sku_id].member_price_fen,
            quantity=line.quantity,
            terms=terms,
        )
        member_fen += member.member_fen
        priced.append(
            drafts.DraftLine.priced(
                sku_id=line.sku_id,
                product_id=line.product_id,
                name=line.name,
                specs=line.specs,
                price_fen=member.price_fen,
                quantity=line.quantity,
            )
        )
    return priced, _Member(fen=member_fen, free_freight=terms.svip)


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
    reads: confirm_reads.LoneReads,
    *,
    delivery: str,
    store_id: int | None,
    slot_id: int | None,
    address_id: int | None,
    start: dt.datetime | None = None,
) -> _Destination:
    """Where the order goes, checked in this order: a pickup store (``pickup.pickup_store_choose``:
    goods only, a known store); else a consultation's slot (:func:`_slot_check`); else goods'
    address: ``address_id`` of the customer's, or the default one (InvalidInput when none)."""
    pickup_store = pickup.pickup_store_choose(kind=kind, delivery=delivery, store_id=store_id)
    if pickup_store:
        return _Destination(slot=None, address=None, pickup_store=pickup_store)
    if kind == Kind.CONSULTATION:
        return _Destination(slot=_slot_check(lines, skus, slot_id, start), address=None, pickup_store=None)
    if slot_id is not None or start is not None:
        raise InvalidInput("只有咨询订单需要选择时段。", slot_id=["只有咨询订单需要选择时段"])
    if address_id is None:
        address = reads.address_default(customer)
        if address is None:
            raise InvalidInput("请先添加收货地址。", address_id=["请先添加收货地址"])
    else:
        address = reads.address(customer, address_id)
        if address is None:
            raise InvalidInput("收货地址不存在，请重新选择。", address_id=["请选择您自己的收货地址"])
    return _Destination(slot=None, address=address, pickup_store=None)


def _draft_price(
    customer: Customer,
    kind: str,
    lines: list[drafts.DraftLine],
    skus: dict[int, Sku],
    where: _Destination,
    *,
    offer,
    coupon_id: int | None,
    use_points: int | bool,
    cart_items: list[list[int]] | None,
    activity: dict,
    member: _Member = NO_MEMBER,
    reads: confirm_reads.LoneReads,
) -> drafts.OrderDraft:
    """The draft of the priced ``lines`` (``drafts.draft_build``), in this order: freight to the
    address (none for a pickup or a consultation; ``pricing.member_freight_fen``: none with
    ``member.free_freight``, a paid member's, as the 秒杀 gate computes it too), goods plus
    freight within the order's bounds (``drafts.total_check``), then the member discount
    ``member.fen`` (:func:`_member_apply`), the coupon (:func:`_coupon_choose`; none when
    ``offer``, the activity the cart buys in, is set) and the points that take the rest down to
    1 fen at least. ``activity``: the order's ``flash_sale_id``, ``group_buy_id``, ``group_id``,
    ``bargain_no``."""
    address = where.address
    goods_fen = sum(line.amount_fen for line in lines)
    freight_fen = _freight_quote(lines, skus, address) if address is not None else 0
    freight_fen = pricing.member_freight_fen(freight_fen, svip=member.free_freight)
    drafts.total_check(goods_fen + freight_fen)
    member_fen = min(member.fen, goods_fen + freight_fen - 1)  # 1 fen is always paid (WeChat's minimum)
    usable, coupon_fen = _coupon_choose(customer, offer, lines, goods_fen - member_fen, freight_fen, coupon_id, reads)
    points_used, points_fen = _points_apply(customer, use_points, goods_fen + freight_fen - member_fen - coupon_fen - 1)
    return drafts.draft_build(
        customer_id=customer.pk,
        kind=kind,
        lines=lines,
        freight_fen=freight_fen,
        address={"id": address.pk, **address.snapshot()} if address else None,
        coupon_id=coupon_id,
        coupon_fen=coupon_fen,
        points_used=points_used,
        points_fen=points_fen,
        slot=where.slot,
        cart_items=cart_items,
        usable_coupons=usable,
        pickup_store=where.pickup_store,
        now=timezone.now(),
        member_fen=member_fen,
        **activity,
    )


def _coupon_choose(
    customer: Customer,
    sale,
    lines: list[drafts.DraftLine],
    goods_fen: int,
    freight_fen: int,
    coupon_id: int | None,
    reads: confirm_reads.LoneReads,
) -> tuple[list[dict], int]:
    """``(usable coupons, fen the chosen one takes off)``. Coupons (apps.marketing.coupons): what
    each usable one takes off THIS cart, best first; never more than the goods, and at least 1
    fen is left to pay. None in a 秒杀. A ``coupon_id`` not among them -> CouponUnavailable."""
    usable = (
        []
        if sale
        else [
            {**c, "discount_fen": max(0, min(c["discount_fen"], goods_fen, goods_fen + freight_fen - 1))}
            for c in coupons.coupons_for_cart(
                lines=[line.to_json() for line in lines], coupons=reads.coupons(customer.pk)
            )
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


def _slot_check(
    lines: list[drafts.DraftLine], skus: dict[int, Sku], slot_id: int | None, start: dt.datetime | None = None
) -> dict:
    """The consultation's time (``apps.appointments.selectors.slot_json`` shape plus ``product_id``): one line of quantity 1
    and ``start`` (aware) or a legacy ``slot_id`` of the product's teacher, read as its start
    (``slots.slot_start_of``); either way the start must be listed by availability for the
    product (``availability.start_check``), the one check. ``id`` is the legacy slot id given,
    None for ``start``. Raises InvalidInput, SlotUnavailable."""
    if len(lines) != 1 or lines[0].quantity != 1:
        raise InvalidInput("咨询订单只能预约一个时段。", items=["咨询订单只能包含一项服务，数量为 1"])
    product_id = skus[lines[0].sku_id].product_id
    if start is None and slot_id is None:
        raise InvalidInput("请选择咨询时间。", start=["请选择咨询时间"])
    if start is not None:
        slot_id = None
    else:
        teacher = availability.teacher_of_product(product_id)
        start = slots.slot_start_of(slot_id=slot_id, teacher_id=teacher.pk if teacher else None)
    wanted = availability.start_check(product_id=product_id, start=start)
    return {
        "id": slot_id,
        "teacher_id": wanted["teacher_id"],
        "teacher_name": wanted["teacher_name"],
        "start": timezone.localtime(start).isoformat(),
        "end": timezone.localtime(wanted["end"]).isoformat(),
        "product_id": product_id,
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
