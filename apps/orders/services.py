"""Where an order is created and changes state.

Phase 1, :func:`order_confirm`, prices the cart and caches a draft in Redis under a fresh
``order_key``. Phase 2, :func:`order_create`, turns the draft into an order in ONE transaction:
order row (UNIQUE order_key), stock, slot, coupon and points — all or nothing. Every status
change is a conditional UPDATE (``WHERE id = ? AND status = <expected>``) through
:func:`_transition`, whose row count decides what happens next.
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

from apps.accounts import selectors as account_selectors
from apps.accounts import services as wallet
from apps.accounts.models import Customer, WalletEvent
from apps.appointments import services as slots
from apps.appointments.exceptions import SlotUnavailable
from apps.appointments.models import Slot
from apps.catalog import services as stock
from apps.catalog import soldout
from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Kind, Sku
from apps.marketing import services as flash_sales
from apps.orders import drafts, followups
from apps.orders.exceptions import CouponUnavailable, OrderKeyExpired
from apps.orders.models import FollowUp, Order, OrderEvent, OrderLine, OrderStatus
from starmall import dispatch
from starmall.errors import InvalidInput, InvalidState, NotFound

logger = logging.getLogger(__name__)

MAX_LINES = 50
MAX_QUANTITY = 999
MAX_ORDER_FEN = 100_000_000  # 1,000,000 yuan: far below WeChat's int32 total_fee and our columns


# --- phase 1 -------------------------------------------------------------------------------

def order_confirm(
    *,
    customer: Customer,
    items: list[dict],
    slot_id: int | None = None,
    address_id: int | None = None,
    coupon_id: int | None = None,
    use_points: int | bool = 0,
    flash_sale_id: int | None = None,
) -> dict:
    """Price a cart and store it as a draft; return the draft with its ``order_key``.

    ``items``: ``[{"sku_id": int, "quantity": int}]``. A consultation order is one SKU of a
    consultation product, quantity 1, with ``slot_id`` of that product's teacher; a goods
    order needs ``address_id``. ``use_points``: a number of points, or ``true`` for as many
    as the order can take. Amounts are fen; ``pay_fen`` never drops below 1 fen (WeChat's
    minimum). ``flash_sale_id`` (秒杀): exactly one item, the sale's SKU, at the sale's price,
    no coupon (-> CouponUnavailable; points are allowed); the sale's rules are
    ``apps.marketing.services.flash_sale_check`` (invalid_state, limit_exceeded,
    insufficient_stock). Raises InvalidInput, NotFound, InsufficientStock, SlotUnavailable,
    CouponUnavailable, LimitExceeded, InvalidState. Writes nothing to the database.
    """
    quantities = Counter()
    for item in items:
        quantities[item["sku_id"]] += item["quantity"]
    if not quantities or len(quantities) > MAX_LINES:
        raise InvalidInput(items=[f"between 1 and {MAX_LINES} different SKUs"])
    # A flash sale's losers: answered from Redis flags before any database work (issue 8).
    flags = soldout.flagged([soldout.sku_key(pk) for pk in quantities]
                            + ([soldout.flash_sale_key(flash_sale_id)] if flash_sale_id is not None else []))
    if flash_sale_id is not None and soldout.flash_sale_key(flash_sale_id) in flags:
        raise InsufficientStock("秒杀商品已抢完。", flash_sale_id=flash_sale_id, available=0)
    for sku_id in sorted(quantities):
        if soldout.sku_key(sku_id) in flags:
            raise InsufficientStock(sku_id=sku_id, requested=quantities[sku_id], available=0)
    sale = None
    if flash_sale_id is not None:  # 秒杀: the sale's price is final, no coupon on top of it
        if coupon_id is not None:
            raise CouponUnavailable("秒杀商品不能使用优惠券。", coupon_id=coupon_id)
        sale = flash_sales.flash_sale_check(sale_id=flash_sale_id, customer_id=customer.pk, quantities=quantities)
    skus = {s.pk: s for s in Sku.objects.select_related("product").filter(pk__in=quantities)}
    lines = []
    for sku_id, quantity in quantities.items():
        sku = skus.get(sku_id)
        if sku is None or not sku.is_active or not sku.product.is_active:
            raise NotFound("This item is no longer on sale.", sku_id=sku_id)
        if quantity > MAX_QUANTITY:
            raise InvalidInput(items=[f"at most {MAX_QUANTITY} of one SKU"])
        if sku.stock < quantity:
            if sku.stock == 0:
                soldout.mark(soldout.sku_key(sku_id))  # committed stock seen at 0
            raise InsufficientStock(sku_id=sku_id, requested=quantity, available=sku.stock)
        price_fen = sale.price_fen if sale else sku.price_fen
        lines.append({
            "sku_id": sku.pk, "product_id": sku.product_id, "name": sku.product.name,
            "specs": sku.specs, "price_fen": price_fen, "quantity": quantity,
            "amount_fen": price_fen * quantity,
        })
    kinds = {skus[line["sku_id"]].product.kind for line in lines}
    if len(kinds) != 1:
        raise InvalidInput(items=["goods and consultations are ordered separately"])
    kind = kinds.pop()

    slot_data, address = None, None
    if kind == Kind.CONSULTATION:
        slot_data = _confirm_slot(lines, skus, slot_id)
    else:
        if slot_id is not None:
            raise InvalidInput(slot_id=["only consultation orders take a slot"])
        address = account_selectors.address_get(customer=customer, address_id=address_id or 0)
        if address is None:
            raise InvalidInput(address_id=["choose one of your delivery addresses"])

    goods_fen = sum(line["amount_fen"] for line in lines)
    freight_fen = 0
    if kind == Kind.GOODS and goods_fen < settings.FREE_FREIGHT_MIN_FEN:
        freight_fen = settings.FREIGHT_FEN
    if goods_fen + freight_fen < 1:
        raise InvalidInput(items=["the order must cost at least 0.01 yuan (WeChat's minimum)"])
    if goods_fen + freight_fen > MAX_ORDER_FEN:
        raise InvalidInput(items=[f"an order may cost at most {MAX_ORDER_FEN // 100} yuan"])
    coupon_fen = 0
    if coupon_id is not None:
        coupon = account_selectors.coupon_usable(customer_id=customer.pk, coupon_id=coupon_id)
        if coupon is None or goods_fen < coupon.min_spend_fen:
            raise CouponUnavailable(coupon_id=coupon_id)
        coupon_fen = max(0, min(coupon.discount_fen, goods_fen + freight_fen - 1))
    points_used, points_fen = _points(customer, use_points, goods_fen + freight_fen - coupon_fen - 1)
    pay_fen = goods_fen + freight_fen - coupon_fen - points_fen

    order_key = drafts.draft_new_key()
    expires_at = timezone.now() + dt.timedelta(seconds=settings.ORDER_DRAFT_TTL_SECONDS)
    draft = {
        "order_key": order_key, "customer_id": customer.pk, "kind": kind,
        "expires_at": timezone.localtime(expires_at).isoformat(), "lines": lines,
        "goods_fen": goods_fen, "freight_fen": freight_fen, "coupon_id": coupon_id,
        "coupon_fen": coupon_fen, "points_used": points_used, "points_fen": points_fen,
        "pay_fen": pay_fen, "slot": slot_data, "address": address.snapshot() if address else None,
        "flash_sale_id": sale.pk if sale else None,
    }
    drafts.draft_save(order_key, draft)
    return draft


def _confirm_slot(lines: list[dict], skus: dict[int, Sku], slot_id: int | None) -> dict:
    if len(lines) != 1 or lines[0]["quantity"] != 1:
        raise InvalidInput(items=["a consultation order is one SKU, quantity 1"])
    if slot_id is None:
        raise InvalidInput(slot_id=["choose a time slot for the consultation"])
    teacher = getattr(skus[lines[0]["sku_id"]].product, "teacher", None)
    slot = Slot.objects.select_related("teacher").filter(pk=slot_id).first()
    if slot is None or teacher is None or slot.teacher_id != teacher.pk:
        raise SlotUnavailable("This slot does not belong to this consultation.", slot_id=slot_id)
    if not slot.available or slot.start <= timezone.now():
        raise SlotUnavailable(slot_id=slot_id)
    return slot_json(slot)


def slot_json(slot: Slot) -> dict:
    """The slot as shown in drafts and orders (times ISO 8601, Shanghai offset)."""
    return {
        "id": slot.pk, "teacher_id": slot.teacher_id, "teacher_name": slot.teacher.name,
        "start": timezone.localtime(slot.start).isoformat(),
        "end": timezone.localtime(slot.end).isoformat(),
    }


def _points(customer: Customer, use_points: int | bool, max_fen: int) -> tuple[int, int]:
    """(points used, fen they are worth), capped by the customer's points and ``max_fen``."""
    value = settings.POINT_VALUE_FEN
    if use_points is True:
        wanted = customer.points
    elif use_points is False or not use_points:
        return 0, 0
    else:
        wanted = int(use_points)
        if wanted > customer.points:
            raise InvalidInput(use_points=[f"you have {customer.points} points"])
    used = max(0, min(wanted, max_fen // value))
    return used, used * value


# --- phase 2 -------------------------------------------------------------------------------

def order_create(*, customer: Customer, order_key: str, remark: str = "") -> tuple[Order, bool]:
    """Turn the draft ``order_key`` into an order; return ``(order, created)``.

    The same key again returns the existing order with ``created=False`` — also when two
    requests race: the loser's INSERT hits UNIQUE(order_key), its whole transaction (stock,
    slot, coupon, points) rolls back and it returns the winner's order. In one transaction:
    insert the order, book the slot, take the coupon and points, insert lines and the first
    event, and last (hot rows locked briefly) a flash sale's allowance and stock
    (``flash_sale_take``) and the SKUs' stock (conditional UPDATEs, SKU id order). After
    commit: drop the draft and schedule the unpaid timeout. Raises OrderKeyExpired,
    InsufficientStock, SlotUnavailable, CouponUnavailable, InvalidState (points changed; a flash
    sale no longer live), LimitExceeded (flash-sale limit); on any of them nothing is kept.
    """
    # The draft first: while it exists the key has no committed order (the draft is dropped
    # after that commit), and a create racing that commit meets UNIQUE(order_key) below.
    # Saves the order lookup on every first create (issue 8).
    draft = drafts.draft_get(order_key)
    if draft is None or draft["customer_id"] != customer.pk:
        # Replayed key (its order committed and dropped the draft), or expired.
        existing = _order_of_key(order_key, customer)
        if existing is not None:
            return existing, False
        raise OrderKeyExpired()
    now = timezone.now()
    try:
        with transaction.atomic():
            order = Order.objects.create(
                order_no=_new_order_no(now), order_key=order_key, customer=customer,
                kind=draft["kind"], goods_fen=draft["goods_fen"], freight_fen=draft["freight_fen"],
                coupon_id=draft["coupon_id"], coupon_fen=draft["coupon_fen"],
                points_used=draft["points_used"], points_fen=draft["points_fen"],
                pay_fen=draft["pay_fen"], address=draft["address"], remark=remark,
                slot_id=draft["slot"]["id"] if draft["slot"] else None,
                flash_sale_id=draft.get("flash_sale_id"),
                pay_deadline=now + dt.timedelta(minutes=settings.ORDER_PAY_TIMEOUT_MINUTES),
            )
            if draft["slot"]:
                slots.slot_book(
                    slot_id=draft["slot"]["id"], teacher_id=draft["slot"]["teacher_id"],
                    order_no=order.order_no, customer_id=customer.pk,
                )
            if draft["coupon_id"] and not wallet.coupon_take(
                coupon_id=draft["coupon_id"], customer_id=customer.pk, order_no=order.order_no
            ):
                raise CouponUnavailable(coupon_id=draft["coupon_id"])
            if not wallet.points_spend(customer_id=customer.pk, points=draft["points_used"], ref=order.order_no):
                raise InvalidState("Your points changed since confirm; please confirm again.")
            lines = OrderLine.objects.bulk_create([
                OrderLine(
                    order=order, sku_id=line["sku_id"], product_id=line["product_id"], name=line["name"],
                    specs=line["specs"], price_fen=line["price_fen"], quantity=line["quantity"],
                    amount_fen=line["amount_fen"],
                )
                for line in draft["lines"]
            ])
            OrderEvent.objects.create(order=order, to_status=OrderStatus.UNPAID, actor="customer", note="created")
            # The hot rows last, right before commit, so their locks are held briefly: the 秒杀
            # allowance and sale (marketing), then the SKUs (in id order).
            if draft.get("flash_sale_id"):
                flash_sales.flash_sale_take(sale_id=draft["flash_sale_id"], customer_id=customer.pk,
                                            units=sum(line["quantity"] for line in draft["lines"]), now=now)
            stock.sku_stock_decrement(quantities={line["sku_id"]: line["quantity"] for line in draft["lines"]})
            transaction.on_commit(partial(drafts.draft_delete, order_key))
            transaction.on_commit(partial(_schedule_expiry, order.pk, order.pay_deadline))
        _cache_lines(order, lines)
    except IntegrityError:
        winner = Order.objects.filter(order_key=order_key, customer=customer).first()
        if winner is None:
            raise
        return winner, False
    return order, True


def _cache_lines(order: Order, lines: list[OrderLine]) -> None:
    """Let ``order.lines.all()`` answer from the rows just inserted, as prefetch_related would
    (the create response serializes them: one query less per order, issue 8)."""
    cached = order.lines.all()
    cached._result_cache = lines
    cached._prefetch_done = True
    order._prefetched_objects_cache = {"lines": cached}


def _order_of_key(order_key: str, customer: Customer) -> Order | None:
    """The order made from ``order_key``; another customer's key is OrderKeyExpired."""
    order = Order.objects.filter(order_key=order_key).first()
    if order is not None and order.customer_id != customer.pk:
        raise OrderKeyExpired()
    return order


def _new_order_no(now: dt.datetime) -> str:
    """``yyyyMMddHHmmss`` (Shanghai) + 8 random digits: 22 characters, fits out_trade_no (32)."""
    return timezone.localtime(now).strftime("%Y%m%d%H%M%S") + f"{secrets.randbelow(10**8):08d}"


def _schedule_expiry(order_id: int, deadline: dt.datetime) -> None:
    """The countdown task; if Redis is down the per-minute sweep (orders_expire_due) cancels it."""
    from apps.orders.tasks import order_expire  # tasks import services: import here

    dispatch.push(order_expire, order_id, eta=deadline)


# --- transitions ---------------------------------------------------------------------------

def _transition(
    order: Order, *, from_statuses: tuple[str, ...], to: str, actor: str, note: str = "", **fields
) -> bool:
    """``UPDATE order SET status = to WHERE id = ? AND status IN from_statuses``; log it.

    Returns False (and changes nothing) when the order was no longer in ``from_statuses``:
    someone else got there first. Caller holds the transaction.
    """
    updated = Order.objects.filter(pk=order.pk, status__in=from_statuses).update(status=to, **fields)
    if updated != 1:
        return False
    # The row was in one of from_statuses; the in-memory status says which unless it is stale.
    previous = order.status if order.status in from_statuses else from_statuses[0]
    order.status = to
    for name, value in fields.items():
        setattr(order, name, value)
    OrderEvent.objects.create(order=order, from_status=previous, to_status=to, actor=actor, note=note)
    return True


def order_get(*, order_no: str, customer_id: int | None = None) -> Order:
    """The order; with ``customer_id`` only the customer's own (else NotFound)."""
    qs = Order.objects.filter(order_no=order_no)
    if customer_id is not None:
        qs = qs.filter(customer_id=customer_id)
    order = qs.first()
    if order is None:
        raise NotFound("No such order.", order_no=order_no)
    return order


def order_cancel(*, order: Order, actor: str, reason: str) -> bool:
    """Cancel an unpaid order and give back stock, slot, coupon and points — exactly once.

    The conditional ``unpaid -> cancelled`` UPDATE is the guard: whoever wins it (customer,
    timeout task, sweep) restores; everyone else gets False and restores nothing.
    """
    with transaction.atomic():
        if not _transition(
            order, from_statuses=(OrderStatus.UNPAID,), to=OrderStatus.CANCELLED, actor=actor,
            note=reason, cancelled_at=timezone.now(), cancel_reason=reason,
        ):
            return False
        _release_holdings(order)
    return True


def _release_holdings(order: Order) -> None:
    """Give back what an unpaid order took at create; runs once, under the caller's transition."""
    _restock(order)
    if order.coupon_id:
        wallet.coupon_return(coupon_id=order.coupon_id, order_no=order.order_no)


def _restock(order: Order) -> None:
    """Return the order's units to stock, its slot and the points it spent (once per order:
    the caller's transition guards it; the points' WalletEvent is UNIQUE as well)."""
    quantities = Counter()
    for sku_id, quantity in order.lines.values_list("sku_id", "quantity"):
        quantities[sku_id] += quantity
    stock.sku_stock_restore(quantities=quantities)
    if order.flash_sale_id:  # the sale's quota (while not ended) and the customer's allowance
        flash_sales.flash_sale_give_back(sale_id=order.flash_sale_id, customer_id=order.customer_id,
                                         units=sum(quantities.values()), restock=True)
    slots.slot_release(order_no=order.order_no)
    _return_points(order)


def _return_points(order: Order) -> None:
    """Give back the points the order spent (UNIQUE WalletEvent: at most once)."""
    wallet.points_credit(customer_id=order.customer_id, points=order.points_used,
                         reason=WalletEvent.Reason.RETURN, ref=order.order_no)


def _status(order: Order) -> str:
    return Order.objects.values_list("status", flat=True).get(pk=order.pk)


def order_mark_paid(*, order: Order, method: str, paid_at: dt.datetime, actor: str) -> bool:
    """``unpaid -> paid``, count sales and record the follow-ups; caller holds the transaction.

    Returns False when the order was not unpaid (already paid, or cancelled: the caller decides
    what a late payment means). Follow-ups are rows here and reach Redis after commit.
    """
    if not _transition(order, from_statuses=(OrderStatus.UNPAID,), to=OrderStatus.PAID,
                       actor=actor, pay_method=method, paid_at=paid_at):
        return False
    followups.followups_record(
        order=order, kinds=[FollowUp.Kind.SUBSCRIBE_MESSAGE, FollowUp.Kind.SMS, FollowUp.Kind.POINTS_AWARD])
    # Last: a flash sale's orders all count into one product row, locked until commit (issue 8).
    quantities = Counter()
    for product_id, quantity in order.lines.values_list("product_id", "quantity"):
        quantities[product_id] += quantity
    stock.product_sales_add(quantities=quantities)
    return True


def order_mark_refunding(*, order: Order, actor: str) -> bool:
    """A full refund was approved: ``paid/shipped/completed -> refunding`` (caller's transaction)."""
    return _transition(order, from_statuses=(OrderStatus.PAID, OrderStatus.SHIPPED, OrderStatus.COMPLETED),
                       to=OrderStatus.REFUNDING, actor=actor, note="full refund approved")


def order_mark_refunded(*, order: Order, actor: str, restock: bool) -> bool:
    """The full refund arrived: ``refunding -> refunded``. The points the order spent come back;
    with ``restock`` (goods not shipped, or a consultation not held) the stock and the slot
    too — once, under the transition."""
    with transaction.atomic():
        if not _transition(order, from_statuses=(OrderStatus.REFUNDING,), to=OrderStatus.REFUNDED,
                           actor=actor, note="fully refunded"):
            return False
        if restock:
            _restock(order)
        else:
            _return_points(order)
            if order.flash_sale_id:  # not live any more: the allowance comes back, the units do not
                flash_sales.flash_sale_give_back(sale_id=order.flash_sale_id, customer_id=order.customer_id,
                                                 units=sum(order.lines.values_list("quantity", flat=True)),
                                                 restock=False)
    return True


def order_ship(*, order: Order, actor: str) -> bool:
    """Staff: a paid goods order was handed to the carrier (``paid -> shipped``)."""
    if order.kind != Kind.GOODS:
        return False
    with transaction.atomic():
        return _transition(order, from_statuses=(OrderStatus.PAID,), to=OrderStatus.SHIPPED,
                           actor=actor, shipped_at=timezone.now())


def order_complete(*, order: Order, actor: str) -> bool:
    """``shipped -> completed`` (goods received) or ``paid -> completed`` (consultation held)."""
    allowed = (OrderStatus.SHIPPED,) if order.kind == Kind.GOODS else (OrderStatus.PAID,)
    with transaction.atomic():
        return _transition(order, from_statuses=allowed, to=OrderStatus.COMPLETED, actor=actor,
                           completed_at=timezone.now())


def orders_complete_held_consultations(*, now: dt.datetime | None = None) -> int:
    """Beat: paid consultation orders whose slot has ended become ``completed``; returns how many."""
    now = now or timezone.now()
    due = Order.objects.filter(status=OrderStatus.PAID, kind=Kind.CONSULTATION, slot__end__lte=now)
    return sum(order_complete(order=order, actor="system:slot-passed") for order in due[:500])


def order_receive(*, order_no: str, customer_id: int) -> Order:
    """The customer confirms receipt: ``shipped -> completed``, else InvalidState."""
    order = order_get(order_no=order_no, customer_id=customer_id)
    if order.kind != Kind.GOODS or not order_complete(order=order, actor="customer"):
        raise InvalidState("Only shipped orders can be confirmed as received.", status=_status(order))
    order.refresh_from_db()
    return order
