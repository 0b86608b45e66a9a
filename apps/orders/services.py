"""Where an order is created and changes state.

Phase 1, :func:`order_confirm`, prices the cart and caches a draft in Redis under a fresh
``order_key``. Phase 2, :func:`order_create`, turns the draft into an order in ONE transaction:
order row (UNIQUE order_key), stock, slot, coupon and points — all or nothing. Every status
change is a conditional UPDATE (``WHERE id = ? AND status = <expected>``) through
:func:`order_transition`, whose row count decides what happens next.

The ``order_mark_*`` functions are the bare state changes. Cancelling an order is
``apps.payments.order_lifecycle.order_cancel`` (it asks WeChat first); :func:`order_mark_cancelled`
is only its last step.

Per-customer caps (API.md Additions): at most ``MAX_UNPAID_ORDERS`` unpaid orders and
``MAX_UNPAID_CONSULTATIONS`` (1) unpaid consultation at once, checked at confirm and enforced
in create's transaction under a lock of the customer's row (:func:`_caps_enforce`).
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
from collections import Counter
from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.accounts import address_cards, wallet
from apps.accounts import selectors as account_selectors
from apps.accounts.models import Customer, WalletEvent
from apps.appointments import slots
from apps.appointments.exceptions import SlotUnavailable
from apps.appointments.models import Slot
from apps.catalog import soldout, stock
from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Kind, Sku
from apps.marketing import bargains, coupons, flash_sales, group_buys
from apps.orders import cart, drafts, events, flash_reservations, followups, order_rows, pickup
from apps.orders.exceptions import CouponUnavailable, OrderKeyExpired
from apps.orders.models import AfterSale, Delivery, FollowUp, Order, OrderStatus
from apps.shipping import selectors as freight
from starmall.errors import InvalidInput, InvalidState, LimitExceeded, NotFound
from starmall.locking import retry_on_lock_conflict

logger = logging.getLogger(__name__)

MAX_LINES = cart.MAX_LINES  # distinct SKUs in one order (the API's and the cart's limit)
MAX_QUANTITY = cart.MAX_QUANTITY  # units of one SKU
MAX_ORDER_FEN = 100_000_000  # 1,000,000 yuan: far below WeChat's int32 total_fee and our columns


# --- phase 1 -------------------------------------------------------------------------------


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
    _caps_check(customer_id=customer.pk, kind=kind)
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


def _caps_check(*, customer_id: int, kind: str, new: int = 1) -> None:
    """Raise LimitExceeded when the customer's unpaid orders plus ``new`` more of ``kind``
    pass the caps. Confirm passes ``new=1`` (the order it prepares); create passes 0, as its
    own uncommitted order is already in the count (:func:`_caps_enforce`). One query on the
    (customer, status) index.
    """
    unpaid = list(
        Order.objects.filter(customer_id=customer_id, status=OrderStatus.UNPAID)
        .order_by()
        .values_list("kind", flat=True)[: settings.MAX_UNPAID_ORDERS + 1]
    )
    limit = settings.MAX_UNPAID_ORDERS
    if len(unpaid) + new > limit:
        raise LimitExceeded(f"您有 {limit} 个待支付订单，请先支付或取消后再下单。", max_unpaid_orders=limit)
    if kind == Kind.CONSULTATION and unpaid.count(Kind.CONSULTATION) + new > settings.MAX_UNPAID_CONSULTATIONS:
        raise LimitExceeded(
            "您有一个待支付的咨询预约，请先支付或取消后再预约。",
            max_unpaid_consultations=settings.MAX_UNPAID_CONSULTATIONS,
        )


def _caps_enforce(*, customer_id: int, kind: str) -> None:
    """The caps inside create's transaction, after the new order row was inserted.

    The customer's row is locked (``SELECT ... FOR UPDATE``) so that creates of one customer
    pass this point one at a time; under READ COMMITTED the count that follows the lock sees
    every order a previous holder committed, plus our own uncommitted one. A counter column
    would need a decrement on every way out of ``unpaid`` (paid, cancelled, by any path);
    the lock needs nothing but this check. In create the lock comes after the slot and the
    coupon and before the flash sale and the stock — step 5 of the lock order in
    ``starmall/locking.py``, where cancel, payment and refund reach the customer's row too, so
    none of them can deadlock with a create; only one customer's own creates wait for each other.
    """
    wallet.customer_lock(customer_id=customer_id)
    _caps_check(customer_id=customer_id, kind=kind, new=0)


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


# --- phase 2 -------------------------------------------------------------------------------


def order_create(*, customer: Customer, order_key: str, remark: str = "") -> tuple[Order, bool]:
    """Turn the draft ``order_key`` into an order; return ``(order, created)``.

    The same key again returns the existing order with ``created=False`` — also when two
    requests race: the loser's INSERT hits UNIQUE(order_key), its whole transaction (stock,
    slot, coupon, points) rolls back and it returns the winner's order. In one transaction:
    insert the order with its lines and first event (``order_rows``: one statement on PostgreSQL),
    book the slot, take the coupon and points, enforce the per-customer caps, remove the cart
    lines it bought (``cart_item_ids`` at confirm), and last (hot rows locked briefly) a flash sale's
    allowance and stock (``flash_sale_take``) and the SKUs' stock (conditional UPDATEs, SKU id
    order). After commit: drop the draft and schedule the unpaid timeout. A consultation's
    ``pay_deadline`` is ``min(now + ORDER_PAY_TIMEOUT_MINUTES, slot start -
    BOOKING_MIN_NOTICE_MINUTES)``. Raises OrderKeyExpired, InsufficientStock, SlotUnavailable,
    CouponUnavailable, InvalidState (points changed; a flash sale no longer live), LimitExceeded
    (caps, flash-sale limit); on any of them nothing is kept.
    """
    draft = _draft_take(order_key, customer)
    if draft is None:  # replayed key (its order committed and dropped the draft), or expired
        existing = _order_of_key(order_key, customer)
        if existing is None:
            raise OrderKeyExpired()
        return existing, False
    now = timezone.now()
    try:
        with transaction.atomic():
            # The lock order of starmall/locking.py: order, slot, coupon, customer, sale, SKUs.
            # The order, its lines and its "created" event: one statement on PostgreSQL (order_rows).
            order, lines = order_rows.order_rows_insert(
                draft,
                customer_id=customer.pk,
                order_no=order_no_new(now),
                remark=remark,
                pay_deadline=pay_deadline_of(draft, now),
                now=now,
                extra=_pickup_fields(draft),
            )
            order.customer = customer
            _slot_book(draft, order)
            _coupon_take(draft, order)
            _caps_enforce(customer_id=customer.pk, kind=draft.kind)
            _points_take(draft, order)
            _cart_lines_remove(draft, customer)
            # The hot rows last, right before commit, so their locks are held briefly: the 秒杀
            # allowance and sale (marketing), then the SKUs (in id order).
            _flash_sale_take(draft, customer, now)
            _group_or_bargain_take(draft, customer, order, now)
            _stock_take(draft)
            transaction.on_commit(partial(drafts.draft_delete, order_key))
            if draft.flash_sale_id:  # the reservation's units are the database's now
                transaction.on_commit(partial(flash_reservations.reservation_settle, draft.flash_sale_id, order_key))
        order_rows.lines_cache(order, lines)
    except (InsufficientStock, InvalidState, LimitExceeded):
        if draft.flash_sale_id:  # refused, nothing kept: the reserved units go back to the quota now
            flash_reservations.reservation_give_back(draft.flash_sale_id, order_key)
        raise
    except IntegrityError:
        winner = Order.objects.filter(order_key=order_key, customer=customer).first()
        if winner is None:
            raise
        return winner, False
    return order, True


def _draft_take(order_key: str, customer: Customer) -> drafts.OrderDraft | None:
    """The customer's draft ``order_key``, or None (gone, or another customer's).

    The draft first: while it exists the key has no committed order (the draft is dropped
    after that commit), and a create racing that commit meets UNIQUE(order_key) in
    ``order_rows.order_rows_insert``. Saves the order lookup on every first create.
    """
    data = drafts.draft_get(order_key)
    if data is None or data["customer_id"] != customer.pk:
        return None
    return drafts.OrderDraft.from_json(data)


def pay_deadline_of(draft: drafts.OrderDraft, now: dt.datetime) -> dt.datetime:
    """``now + ORDER_PAY_TIMEOUT_MINUTES``; a consultation's no later than its booking closes."""
    pay_deadline = now + dt.timedelta(minutes=settings.ORDER_PAY_TIMEOUT_MINUTES)
    if draft.slot:
        pay_deadline = min(pay_deadline, slots.booking_closes_at(draft.slot_start))
    return pay_deadline


def _pickup_fields(draft: drafts.OrderDraft) -> dict:
    """The order's delivery columns: a pickup draft's store (自提), else none (express)."""
    if not draft.pickup_store:
        return {}
    return {
        "delivery": Delivery.PICKUP,
        "pickup_store_id": draft.pickup_store["id"],
        "pickup_store": draft.pickup_store,
    }


def _slot_book(draft: drafts.OrderDraft, order: Order) -> None:
    """Book a consultation's slot for the order (lock step 3; SlotUnavailable when taken)."""
    if draft.slot:
        slots.slot_book(
            slot_id=draft.slot["id"],
            teacher_id=draft.slot["teacher_id"],
            order_no=order.order_no,
            customer_id=order.customer_id,
            start=draft.slot_start,
        )


def _coupon_take(draft: drafts.OrderDraft, order: Order) -> None:
    """Mark the chosen coupon used by the order (lock step 4; CouponUnavailable when gone)."""
    if draft.coupon_id and not wallet.coupon_take(
        coupon_id=draft.coupon_id, customer_id=order.customer_id, order_no=order.order_no
    ):
        raise CouponUnavailable(coupon_id=draft.coupon_id)


def _points_take(draft: drafts.OrderDraft, order: Order) -> None:
    """Spend the draft's points (lock step 5, under the customer's row lock of the caps)."""
    if not wallet.points_spend(customer_id=order.customer_id, points=draft.points_used, ref=order.order_no):
        raise InvalidState("您的积分已变化，请重新确认订单。")


def _cart_lines_remove(draft: drafts.OrderDraft, customer: Customer) -> None:
    """Remove the cart lines bought; after the customer's row lock, as cart adds take it."""
    if draft.cart_items:
        cart.cart_items_remove_bought(customer_id=customer.pk, bought=draft.cart_items)


def _flash_sale_take(draft: drafts.OrderDraft, customer: Customer, now: dt.datetime) -> None:
    """A 秒杀's allowance, then the sale's stock (lock step 6)."""
    if draft.flash_sale_id:
        flash_sales.flash_sale_take(sale_id=draft.flash_sale_id, customer_id=customer.pk, units=draft.units, now=now)


def _group_or_bargain_take(draft: drafts.OrderDraft, customer: Customer, order: Order, now: dt.datetime) -> None:
    """A 拼团 seat and the activity's units, or a 砍价 record bought and its unit (lock step 6,
    ``apps.marketing.group_buys.group_take`` / ``bargains.bargain_take``); the order row (ours,
    step 1) records which."""
    if draft.group_buy_id or draft.group_id:
        order.group_id = group_buys.group_take(
            customer_id=customer.pk,
            order_no=order.order_no,
            units=draft.units,
            group_buy_id=draft.group_buy_id,
            group_id=draft.group_id,
            now=now,
        )
        Order.objects.filter(pk=order.pk).update(group_id=order.group_id)
    elif draft.bargain_no:
        order.bargain_id = bargains.bargain_take(
            bargain_no=draft.bargain_no, customer_id=customer.pk, order_no=order.order_no, now=now
        )
        Order.objects.filter(pk=order.pk).update(bargain_id=order.bargain_id)


def _stock_take(draft: drafts.OrderDraft) -> None:
    """Take the lines' units from SKU stock (lock step 7: conditional UPDATEs in SKU id order)."""
    stock.sku_stock_decrement(quantities=draft.quantities)


def _order_of_key(order_key: str, customer: Customer) -> Order | None:
    """The order made from ``order_key``; another customer's key is OrderKeyExpired."""
    order = Order.objects.filter(order_key=order_key).first()
    if order is not None and order.customer_id != customer.pk:
        raise OrderKeyExpired()
    return order


def order_no_new(now: dt.datetime) -> str:
    """``yyyyMMddHHmmss`` (Shanghai) + 8 random digits: 22 characters, fits out_trade_no (32)."""
    return timezone.localtime(now).strftime("%Y%m%d%H%M%S") + f"{secrets.randbelow(10**8):08d}"


# --- transitions ---------------------------------------------------------------------------


def order_lock_for_handover(order: Order, *, waiting: str) -> bool:
    """Before goods leave the shop (shipped, or collected at a store), in the caller's
    transaction: lock the order's row (step 1 of ``starmall/locking.py``, as ``refund_request``
    and ``after_sale_approve`` take it, so no request slips in between); False unless it is
    paid; InvalidState ``waiting`` (``refund_no`` in detail) while a refund request waits."""
    locked = Order.objects.select_for_update().filter(pk=order.pk).values_list("status", flat=True).first()
    if locked != OrderStatus.PAID:
        return False
    request = AfterSale.objects.filter(order_id=order.pk, status=AfterSale.Status.REQUESTED).first()
    if request is not None:
        raise InvalidState(waiting, refund_no=request.refund_no)
    return True


@transaction.atomic(savepoint=False)
def order_transition(
    order: Order, *, from_statuses: tuple[str, ...], to: str, actor: str, note: str = "", **fields
) -> bool:
    """``UPDATE order SET status = to WHERE id = ? AND status IN from_statuses``; log it.

    Returns False (and changes nothing) when the order was no longer in ``from_statuses``:
    someone else got there first. Joins the caller's transaction or opens one.
    """
    updated = Order.objects.filter(pk=order.pk, status__in=from_statuses).update(status=to, **fields)
    if updated != 1:
        return False
    # The row was in one of from_statuses; the in-memory status says which unless it is stale.
    previous = order.status if order.status in from_statuses else from_statuses[0]
    order.status = to
    for name, value in fields.items():
        setattr(order, name, value)
    events.order_status_changed_event(order=order, from_status=previous, to_status=to, actor=actor, note=note)
    return True


def order_lock(*, order_id: int) -> Order:
    """``SELECT ... FOR UPDATE`` the order's row and return the order as it is now.

    Step 1 of the lock order (``starmall/locking.py``): a transaction that goes on to the
    order's payment or refund rows, its customer or its units takes this first. Needs a
    transaction; raises ``Order.DoesNotExist``.
    """
    return Order.objects.select_for_update().get(pk=order_id)


def order_get(*, order_no: str, customer_id: int | None = None) -> Order:
    """The order; with ``customer_id`` only the customer's own (else NotFound)."""
    qs = Order.objects.filter(order_no=order_no)
    if customer_id is not None:
        qs = qs.filter(customer_id=customer_id)
    order = qs.first()
    if order is None:
        raise NotFound("订单不存在。", order_no=order_no)
    return order


@retry_on_lock_conflict  # the whole give-back, once more after a lock conflict (starmall/locking.py)
@transaction.atomic(savepoint=False)
def order_mark_cancelled(*, order: Order, actor: str, reason: str) -> bool:
    """The bare state change ``unpaid -> cancelled``: give back stock, slot, coupon and points
    — exactly once. NOT the cancel: call ``apps.payments.order_lifecycle.order_cancel``, which first
    makes sure WeChat will not take the money, then calls this.

    The conditional UPDATE is the guard: whoever wins it (customer, timeout task, sweep)
    restores; everyone else gets False and restores nothing. Joins the caller's transaction
    or opens one (then run once more after a lock conflict, else ``DatabaseBusy``).
    """
    if not order_transition(
        order,
        from_statuses=(OrderStatus.UNPAID,),
        to=OrderStatus.CANCELLED,
        actor=actor,
        note=reason,
        cancelled_at=timezone.now(),
        cancel_reason=reason,
    ):
        return False
    _give_back(order, restock=True)
    return True


def _give_back(order: Order, *, restock: bool) -> None:
    """What an order that stops being live returns, once per order (the caller's transition
    guards it; the points' WalletEvent is UNIQUE as well): with ``restock`` its slot and units,
    always its coupon (while valid), the points it spent, the points it earned (voided, once
    paid) and a flash sale's allowance (the sale's quota too with ``restock``).

    In the lock order of ``starmall/locking.py``, after the order row the caller's transition
    holds: slot (3), coupon (4), customer (5), flash sale (6), SKUs in id order (7) — the
    order ``order_create`` took them in, so a cancel and a create of one customer sharing a
    SKU cannot deadlock.
    """
    if restock:
        slots.slot_release(order_no=order.order_no)
    if order.coupon_id:
        wallet.coupon_return(coupon_id=order.coupon_id, order_no=order.order_no)
    wallet.points_credit(
        customer_id=order.customer_id, points=order.points_used, reason=WalletEvent.Reason.RETURN, ref=order.order_no
    )
    if order.paid_at and order.status == OrderStatus.CANCELLED:
        # Only a paid order can have earned points (awards follow a payment); a refunded one
        # lost them when it became refunding (order_mark_refunding).
        wallet.points_award_void(customer_id=order.customer_id, order_no=order.order_no)
    quantities = Counter()
    for sku_id, quantity in order.lines.values_list("sku_id", "quantity"):
        quantities[sku_id] += quantity
    if order.flash_sale_id:  # the customer's allowance; with restock the sale's quota (while not ended)
        flash_sales.flash_sale_give_back(
            sale_id=order.flash_sale_id, customer_id=order.customer_id, units=sum(quantities.values()), restock=restock
        )
    if order.group_id:  # the 拼团 seat; with restock the activity's quota (while it runs)
        group_buys.group_give_back(
            group_id=order.group_id, order_no=order.order_no, units=sum(quantities.values()), restock=restock
        )
    if order.bargain_id:  # a cancelled order reopens the 砍价 record; with restock the campaign's quota
        bargains.bargain_give_back(
            record_id=order.bargain_id, restock=restock, cancelled=order.status == OrderStatus.CANCELLED
        )
    if restock:
        stock.sku_stock_restore(quantities=quantities)


def _product_units(order: Order) -> Counter:
    quantities = Counter()
    for product_id, quantity in order.lines.values_list("product_id", "quantity"):
        quantities[product_id] += quantity
    return quantities


def _status(order: Order) -> str:
    return Order.objects.values_list("status", flat=True).get(pk=order.pk)


@transaction.atomic(savepoint=False)
def order_mark_paid(*, order: Order, method: str, paid_at: dt.datetime, actor: str) -> bool:
    """``unpaid -> paid``, count sales and record the follow-ups (message, SMS, the points award,
    which is frozen: see ``followups._award_points``), in the paying transaction.

    Returns False when the order was not unpaid (already paid, or cancelled: the caller decides
    what a late payment means). Follow-ups are rows here and reach Redis after commit.
    """
    if not order_transition(
        order, from_statuses=(OrderStatus.UNPAID,), to=OrderStatus.PAID, actor=actor, pay_method=method, paid_at=paid_at
    ):
        return False
    kinds = [FollowUp.Kind.SUBSCRIBE_MESSAGE, FollowUp.Kind.SMS, FollowUp.Kind.POINTS_AWARD]
    for extra in followups.PAID_KINDS:  # e.g. the referrers' commissions (apps.distribution)
        kinds += extra(order)
    if order.kind == Kind.CONSULTATION:
        kinds.append(FollowUp.Kind.CHAT_OPEN)  # the chat with the teacher (apps.chat registers it)
    followups.followup_record_many(order=order, kinds=kinds)
    _pickup_code_assign(order)
    if order.group_id:  # the 拼团 seat is paid; the payment filling the last seat completes the group (step 6)
        group_buys.group_seat_paid(group_id=order.group_id, order_no=order.order_no, paid_at=paid_at)
    # Last (step 8 of starmall/locking.py): a flash sale's orders all count into one product
    # row, locked until commit; a balance payment debits the customer (step 5) before this.
    stock.product_sales_add(quantities=_product_units(order))
    return True


def _pickup_code_assign(order: Order) -> None:
    """A paid pickup order gets its pickup code (unique among live pickup orders)."""
    if order.delivery == Delivery.PICKUP:
        pickup.pickup_code_assign(order)


@transaction.atomic(savepoint=False)
def order_mark_refunding(*, order: Order, actor: str) -> bool:
    """A full refund was approved: ``paid/shipped/completed -> refunding``, in the approving
    transaction. The points the order earned die now (frozen: void; released: taken back)."""
    if not order_transition(
        order,
        from_statuses=(OrderStatus.PAID, OrderStatus.SHIPPED, OrderStatus.COMPLETED),
        to=OrderStatus.REFUNDING,
        actor=actor,
        note="同意全额退款",
    ):
        return False
    wallet.points_award_void(customer_id=order.customer_id, order_no=order.order_no)
    return True


@transaction.atomic(savepoint=False)
def order_mark_refunded(*, order: Order, actor: str, restock: bool) -> bool:
    """The full refund arrived: ``refunding -> refunded``, once, under the transition.

    The points the order spent come back, its coupon too while still valid (API.md), and its
    units leave ``Product.sales`` (sales count live orders only); with ``restock`` (goods not
    shipped, or a consultation not held) the stock and the slot come back as well. (The points
    it earned died at ``refunding``.)
    """
    if not order_transition(
        order, from_statuses=(OrderStatus.REFUNDING,), to=OrderStatus.REFUNDED, actor=actor, note="已全额退款"
    ):
        return False
    _give_back(order, restock=restock)  # not live any more: without restock the units stay out
    # Last, step 8 of starmall/locking.py: the product rows every paying order counts into.
    stock.product_sales_remove(quantities=_product_units(order))
    return True


def order_complete(*, order: Order, actor: str) -> bool:
    """``shipped -> completed`` (goods received) or ``paid -> completed`` (consultation held).

    The points the order earned become due ``POINTS_FREEZE_DAYS`` after this moment.
    """
    allowed = (OrderStatus.SHIPPED,) if order.kind == Kind.GOODS else (OrderStatus.PAID,)
    now = timezone.now()
    with transaction.atomic():
        if not order_transition(order, from_statuses=allowed, to=OrderStatus.COMPLETED, actor=actor, completed_at=now):
            return False
        wallet.points_award_schedule(order_no=order.order_no, completed_at=now)
    return True


def orders_complete_held_consultations(*, now: dt.datetime | None = None) -> int:
    """Beat: paid consultation orders whose slot has ended become ``completed``; returns how many."""
    now = now or timezone.now()
    due = Order.objects.filter(status=OrderStatus.PAID, kind=Kind.CONSULTATION, slot__end__lte=now)
    return sum(order_complete(order=order, actor="system:slot-passed") for order in due[:500])


def order_receive(*, order_no: str, customer_id: int) -> Order:
    """The customer confirms receipt: ``shipped -> completed``, else InvalidState."""
    order = order_get(order_no=order_no, customer_id=customer_id)
    if order.kind != Kind.GOODS or not order_complete(order=order, actor="customer"):
        raise InvalidState("只有已发货的订单可以确认收货。", status=_status(order))
    order.refresh_from_db()
    return order


def order_mark_picked_up(*, order: Order, actor: str, verifier: str) -> bool:
    """A store's staff handed a paid pickup order over (自提核销): ``paid -> completed``, with
    the verification's time and ``verifier`` (a staff username) written by the same
    conditional UPDATE — whoever wins it completes the order; everyone else gets False and
    changes nothing. The points the order earned become due ``POINTS_FREEZE_DAYS`` from now.

    The order row is locked first (step 1 of ``starmall/locking.py``), as ``order_ship`` does,
    so that a refund request cannot slip in between the check and the hand-over; a request
    waiting for staff raises InvalidState (``refund_no`` in detail). Called by
    ``apps.stores.services.pickup_verify`` (permissions, the store, the log). Joins the
    caller's transaction or opens one.
    """
    if order.delivery != Delivery.PICKUP:
        return False
    with transaction.atomic():
        if not order_lock_for_handover(order, waiting="该订单有进行中的退款申请，请先处理。"):
            return False
        now = timezone.now()
        if not order_transition(
            order,
            from_statuses=(OrderStatus.PAID,),
            to=OrderStatus.COMPLETED,
            actor=actor,
            note="到店自提核销",
            completed_at=now,
            pickup_verified_at=now,
            pickup_verified_by=verifier[:150],
        ):
            return False
        wallet.points_award_schedule(order_no=order.order_no, completed_at=now)
    return True
