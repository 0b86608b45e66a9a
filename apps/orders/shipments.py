"""Shipping with a carrier and tracking number, tracking, automatic receipt, buying again.

:func:`order_ship` is THE shipping: it validates the carrier and number with
:func:`shipment_check`, and in its transaction calls :func:`shipment_record` (the Shipment row
and the "shipped" subscription message, an outbox follow-up). :func:`shipment_correct` changes
a shipped order's tracking number. Both tell the ``followups.DELIVERED`` hooks (the shipping
information to WeChat, ``apps.payments.shipping_info``). Tracking asks the pluggable provider of
``apps.logistics`` (cached; 503 when it is down).
"""

from __future__ import annotations

import datetime as dt
import re

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.catalog.models import Kind
from apps.logistics import carriers, providers
from apps.marketing import group_buys
from apps.orders import events, followups, services
from apps.orders.models import AfterSale, Delivery, FollowUp, Order, OrderStatus, Shipment
from starmall.errors import InvalidInput, InvalidState

TRACKING_NO = re.compile(r"[A-Za-z0-9-]{6,40}")


def shipment_check(*, carrier_code: str, tracking_no: str) -> tuple[str, str]:
    """``(carrier name, cleaned tracking number)``; InvalidInput for a carrier the shop does not
    ship with (``apps.logistics.carriers.CARRIERS``) or a number that is not 6-40 letters,
    digits or dashes."""
    name = carriers.carrier_name(carrier_code)
    if name is None:
        raise InvalidInput("请选择快递公司。", carrier_code=[f"可选：{', '.join(carriers.CARRIERS)}"])
    tracking_no = (tracking_no or "").strip()
    if not TRACKING_NO.fullmatch(tracking_no):
        raise InvalidInput("快递单号不正确。", tracking_no=["6 到 40 位字母、数字或短横线"])
    return name, tracking_no


@transaction.atomic(savepoint=False)
def shipment_record(
    *, order: Order, carrier_code: str, carrier: str, tracking_no: str, actor: str, shipped_at: dt.datetime
) -> Shipment:
    """In the shipping transaction (after ``paid -> shipped`` won): the Shipment row (UNIQUE
    order), the "shipped" subscription message follow-up and the ``followups.DELIVERED`` hooks
    (``"express"``: the shipping information to WeChat)."""
    shipment = Shipment.objects.create(
        order=order,
        carrier_code=carrier_code,
        carrier=carrier,
        tracking_no=tracking_no,
        shipped_by=actor,
        shipped_at=shipped_at,
    )
    followups.followup_record(order=order, kind=FollowUp.Kind.SHIPPED_MESSAGE)
    followups.delivered_run(order=order, how="express")
    return shipment


def shipment_correct(*, order: Order, actor: str, carrier_code: str, tracking_no: str) -> bool:
    """Staff: correct the carrier and tracking number of a shipped goods order (a mistyped
    number, a parcel re-sent); True when it changed.

    Checked as :func:`order_ship` checks (InvalidInput before anything changes). In one
    transaction, the order row locked: the Shipment is updated (written when the order was
    shipped by hand), the change logged on the order, and the ``followups.DELIVERED`` hooks
    hear ``"express"`` again (the shipping information is uploaded again: WeChat takes a
    re-upload as a correction). False when the order is not ``shipped`` or nothing differs.
    """
    carrier, tracking_no = shipment_check(carrier_code=carrier_code, tracking_no=tracking_no)
    with transaction.atomic():
        locked = services.order_lock(order_id=order.pk)
        if locked.status != OrderStatus.SHIPPED or locked.kind != Kind.GOODS:
            return False
        shipment = Shipment.objects.filter(order=locked).first()
        if shipment is None:
            shipment_record(
                order=locked,
                carrier_code=carrier_code,
                carrier=carrier,
                tracking_no=tracking_no,
                actor=actor,
                shipped_at=locked.shipped_at or timezone.now(),
            )
            return True
        if (shipment.carrier_code, shipment.tracking_no) == (carrier_code, tracking_no):
            return False
        Shipment.objects.filter(pk=shipment.pk).update(
            carrier_code=carrier_code, carrier=carrier, tracking_no=tracking_no
        )
        events.order_shipment_corrected_event(
            order=locked,
            actor=actor,
            before=f"{shipment.carrier} {shipment.tracking_no}",
            after=f"{carrier} {tracking_no}",
        )
        followups.delivered_run(order=locked, how="express")
        return True


def shipment_json(order: Order) -> dict | None:
    """The order's ``shipment`` (API.md): null, or carrier, carrier_code, tracking_no, shipped_at.

    No query for an order never shipped (``shipped_at`` null: the create and pay answers of the
    hot path stay as they were)."""
    if order.shipped_at is None:
        return None
    shipment = getattr(order, "shipment", None) if _has_shipment(order) else None
    if shipment is None:
        return None
    return {
        "carrier": shipment.carrier,
        "carrier_code": shipment.carrier_code,
        "tracking_no": shipment.tracking_no,
        "shipped_at": timezone.localtime(shipment.shipped_at).isoformat(),
    }


def _has_shipment(order: Order) -> bool:
    try:
        order.shipment  # noqa: B018 - loads (or reads the select_related cache)
    except Shipment.DoesNotExist:
        return False
    return True


def auto_receive_at(order: Order) -> dt.datetime | None:
    """When a shipped goods order completes by itself: shipped_at + AUTO_RECEIVE_DAYS."""
    if order.kind != Kind.GOODS or order.status != OrderStatus.SHIPPED or not order.shipped_at:
        return None
    return order.shipped_at + dt.timedelta(days=settings.AUTO_RECEIVE_DAYS)


def order_ship(*, order: Order, actor: str, carrier_code: str = "", tracking_no: str = "") -> bool:
    """Staff: a paid goods order was handed to the carrier (``paid -> shipped``).

    With ``carrier_code`` (``apps.logistics.carriers``) and ``tracking_no`` the same transaction
    writes the Shipment and the customer's "shipped" subscription message (an outbox
    follow-up; ``shipment_record``); without them (hand delivery) only the status
    moves. Raises InvalidInput (unknown carrier, bad number: checked before anything changes).
    False when the order is not a paid goods order (any more). Raises InvalidState (reason in
    Chinese, ``refund_no`` in detail) while a refund request waits for staff: decide it first
    (a request approved before shipping returns the stock; one approved after it does not).
    """
    carrier = None
    if carrier_code or tracking_no:
        carrier, tracking_no = shipment_check(carrier_code=carrier_code, tracking_no=tracking_no)
    if order.kind != Kind.GOODS or order.delivery == Delivery.PICKUP:  # pickups are collected, never shipped
        return False
    with transaction.atomic():
        # The order row is locked before the refund check, as refund_request and
        # after_sale_approve lock it: a request cannot slip in between check and shipment.
        if not services.order_lock_for_handover(order, waiting="有进行中的退款申请"):
            return False
        refusal = group_buys.group_ship_refusal(group_id=order.group_id) if order.group_id else None
        if refusal is not None:  # a 拼团 order ships once its group is done
            raise InvalidState(refusal, group_id=order.group_id)
        now = timezone.now()
        if not services.order_transition(
            order, from_statuses=(OrderStatus.PAID,), to=OrderStatus.SHIPPED, actor=actor, shipped_at=now
        ):
            return False
        if carrier is not None:
            shipment_record(
                order=order,
                carrier_code=carrier_code,
                carrier=carrier,
                tracking_no=tracking_no,
                actor=actor,
                shipped_at=now,
            )
        else:  # handed over by the shop itself
            followups.delivered_run(order=order, how="hand")
        return True


def order_tracking(*, order_no: str, customer_id: int) -> dict:
    """The customer's parcel: ``{"carrier", "carrier_code", "tracking_no", "state", "events"}``.

    NotFound (not theirs), InvalidState (not shipped with a tracking number),
    LogisticsUnavailable (503) when the provider cannot answer.
    """
    order = services.order_get(order_no=order_no, customer_id=customer_id)
    shipment = Shipment.objects.filter(order=order).first()
    if shipment is None:
        raise InvalidState("订单尚未发货，暂无物流信息。", status=order.status)
    phone = (order.address or {}).get("phone", "")
    tracking = providers.tracking_get(
        carrier_code=shipment.carrier_code, tracking_no=shipment.tracking_no, phone=phone[-4:]
    )
    return {
        "carrier": shipment.carrier,
        "carrier_code": shipment.carrier_code,
        "tracking_no": shipment.tracking_no,
        "state": tracking.state,
        "events": tracking.events,
    }


def orders_auto_receive(*, now: dt.datetime | None = None, limit: int = 500) -> int:
    """Beat: shipped goods orders shipped AUTO_RECEIVE_DAYS ago or more become ``completed``
    (which starts the points' freeze countdown); returns how many. An order with an open
    after-sale request (requested, return under way) waits for it. Safe to run twice: each
    completion is the conditional ``shipped -> completed``."""
    now = now or timezone.now()
    due = (
        Order.objects.filter(
            status=OrderStatus.SHIPPED,
            kind=Kind.GOODS,
            shipped_at__lte=now - dt.timedelta(days=settings.AUTO_RECEIVE_DAYS),
        )
        .exclude(after_sales__status__in=AfterSale.OPEN)
        .order_by("shipped_at", "id")  # the longest waiting first, along the shipped orders' own index
    )
    return sum(services.order_complete(order=order, actor="system:auto-receive") for order in due[:limit])
