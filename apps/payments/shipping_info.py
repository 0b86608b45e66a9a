"""Shipping information to WeChat (小程序发货信息管理; WECHAT.md "Shipping information", API.md
"Going live"): every WeChat-paid order is reported once, so staff never type orders into WeChat.

:func:`delivered_hook` records the :class:`ShippingInfo` row and its outbox follow-up in the
transaction that shipped the order, paid a consultation or verified a pickup;
:func:`followup_send` uploads it from the worker, retried with backoff (:data:`RETRY`) until
WeChat answers 0, then FAILED with the follow-up's one alert. A correction (a changed tracking
number, :func:`shipping_info_reupload`) is a new version and a new follow-up; a version WeChat
took is never uploaded again. Balance payments are not WeChat's and are not reported.
"""

from __future__ import annotations

import datetime as dt
import logging
from functools import partial

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.accounts import wechat
from apps.logistics import carriers
from apps.orders import followups
from apps.orders.models import FollowUp, Order, PayMethod, Shipment
from apps.payments.models import Payment, PaymentStatus, ShippingInfo, WechatJumpPath
from starmall.errors import InvalidState

logger = logging.getLogger(__name__)

PERMISSION = "payments.upload_shipping_info"
LOGISTICS_TYPES = {
    "express": ShippingInfo.LogisticsType.EXPRESS,
    "hand": ShippingInfo.LogisticsType.LOCAL,
    "virtual": ShippingInfo.LogisticsType.VIRTUAL,
    "pickup": ShippingInfo.LogisticsType.PICKUP,
}
ITEM_DESC_MAX = 120  # WeChat: item_desc <= 120 characters


def _backoff(attempts: int) -> dt.timedelta:
    """1, 2, 4, ... minutes after the n-th failed try, at most an hour."""
    return dt.timedelta(minutes=min(2 ** (attempts - 1), 60))


#: 8 tries over about two hours (WeChat may not know a payment for a while: 10060001)
RETRY = followups.RetryPolicy(max_attempts=8, backoff=_backoff)


def _followup_key(order: Order, version: int) -> str:
    return f"{FollowUp.Kind.SHIPPING_INFO}:{order.order_no}:{version}"


def delivered_hook(*, order: Order, how: str) -> ShippingInfo | None:
    """``followups.DELIVERED`` entry, in the caller's transaction: the order's ShippingInfo
    (UNIQUE order; a repeat — a corrected tracking number — is the next version) and its
    follow-up. None when the order was not paid by WeChat (balance)."""
    # as the order row says now (the caller's copy may predate the payment)
    if Order.objects.filter(pk=order.pk).values_list("pay_method", flat=True).get() != PayMethod.WECHAT:
        return None
    payment = (  # the payment that paid it (a later duplicate is refunded, never reported)
        Payment.objects.filter(order_id=order.pk, method=PayMethod.WECHAT, status=PaymentStatus.PAID)
        .exclude(out_trade_no=None)
        .order_by("paid_at", "id")
        .first()
    )
    if payment is None:
        return None
    logistics_type = LOGISTICS_TYPES[how]
    try:
        with transaction.atomic():  # savepoint: the row may exist (a correction)
            info = ShippingInfo.objects.create(
                order=order, payment=payment, out_trade_no=payment.out_trade_no, logistics_type=logistics_type
            )
    except IntegrityError:
        info = _next_version(order=order, logistics_type=logistics_type)
    followups.followup_record(order=order, kind=FollowUp.Kind.SHIPPING_INFO, key=_followup_key(order, info.version))
    return info


def _next_version(*, order: Order, logistics_type: int | None = None) -> ShippingInfo:
    """``version + 1`` and PENDING (a row lock until commit: versions are taken one at a time)."""
    changes = {"version": F("version") + 1, "state": ShippingInfo.State.PENDING}
    if logistics_type is not None:
        changes["logistics_type"] = logistics_type
    ShippingInfo.objects.filter(order=order).update(**changes)
    return ShippingInfo.objects.get(order=order)


def shipping_info_reupload(*, order_id: int, user, actor: str) -> ShippingInfo:
    """Staff: upload the order's shipping information again (a new version, one follow-up).

    ``user`` needs ``payments.upload_shipping_info`` (PermissionDenied), as the back office's
    action checks. Raises InvalidState when the order has nothing to report (not paid by
    WeChat, or not shipped / verified yet). ``actor`` ("staff:<name>") is logged."""
    if user is None or not user.has_perm(PERMISSION):
        raise PermissionDenied(f"需要权限 {PERMISSION}")
    with transaction.atomic():
        order = Order.objects.select_for_update().get(pk=order_id)
        if not ShippingInfo.objects.filter(order=order).exists():
            raise InvalidState(
                "该订单没有需要上传的发货信息（非微信支付，或尚未发货 / 核销）。", order_no=order.order_no
            )
        info = _next_version(order=order)
        followups.followup_record(order=order, kind=FollowUp.Kind.SHIPPING_INFO, key=_followup_key(order, info.version))
    logger.info("shipping info of %s: version %s asked for by %s", order.order_no, info.version, actor)
    return info


# --- the upload ------------------------------------------------------------------------------


def masked_phone(phone: str) -> str:
    """``"13800001234"`` -> ``"138****1234"`` (WeChat: SF needs the contact masked so); "" when
    there are fewer than 7 digits."""
    digits = "".join(ch for ch in phone or "" if ch.isdigit())
    return f"{digits[:3]}****{digits[-4:]}" if len(digits) >= 7 else ""


def item_desc(order: Order) -> str:
    """The goods (or the consultation) as ``"青瓷盖碗*2、茶叶*1"``, at most 120 characters
    (cut with "等")."""
    text = "、".join(
        f"{name}*{quantity}" for name, quantity in order.lines.order_by("pk").values_list("name", "quantity")
    )
    text = text or f"订单{order.order_no}"
    return text if len(text) <= ITEM_DESC_MAX else text[: ITEM_DESC_MAX - 1] + "等"


def _shipping_item(info: ShippingInfo, order: Order) -> dict:
    """One ``shipping_list`` entry: the parcel for an express order, the goods otherwise."""
    item = {"item_desc": item_desc(order)}
    if info.logistics_type != ShippingInfo.LogisticsType.EXPRESS:
        return item
    shipment = Shipment.objects.get(order=order)
    company = carriers.wechat_delivery_id(shipment.carrier_code)
    if company is None:
        raise ValueError(f"carrier {shipment.carrier_code} has no WeChat delivery id (apps/logistics/carriers.py)")
    item.update(tracking_no=shipment.tracking_no, express_company=company)
    phone = masked_phone((order.address or {}).get("phone", ""))
    if phone:  # SF requires it; others accept it
        item["contact"] = {"receiver_contact": phone}
    return item


def shipping_info_body(info: ShippingInfo, *, now: dt.datetime | None = None) -> dict:
    """WeChat's ``upload_shipping_info`` JSON for ``info`` as the order is now (the latest
    tracking number): order by mchid + out_trade_no, one parcel (delivery_mode 1), upload_time
    RFC 3339 in Beijing time, the payer's openid."""
    order = info.order
    return {
        "order_key": {"order_number_type": 1, "mchid": settings.WECHAT_MCH_ID, "out_trade_no": info.out_trade_no},
        "logistics_type": info.logistics_type,
        "delivery_mode": 1,
        "shipping_list": [_shipping_item(info, order)],
        "upload_time": timezone.localtime(now or timezone.now()).isoformat(timespec="seconds"),
        "payer": {"openid": order.customer.openid},
    }


def followup_send(followup: FollowUp) -> followups.Send | None:
    """``followups.SENDS`` entry: the upload of the version the follow-up's key names; None
    (nothing to send, done) when that version was superseded or WeChat already took it."""
    version = int(followup.key.rsplit(":", 1)[1])
    info = ShippingInfo.objects.select_related("order", "order__customer").filter(order_id=followup.order_id).first()
    if info is None or info.version != version or info.uploaded_version >= version:
        return None
    body = shipping_info_body(info)
    return partial(_upload, info_id=info.pk, version=version, body=body, last_try=followups.followup_gives_up(followup))


def _upload(*, info_id: int, version: int, body: dict, last_try: bool) -> None:
    """Call WeChat; the row records the answer at once (the follow-up is marked done next).
    A failure is recorded (errcode, error; FAILED on the last try) and raised for the retry."""
    try:
        wechat.shipping_info_upload(body)
    except Exception as exc:
        errcode = getattr(exc, "errcode", None)
        ShippingInfo.objects.filter(pk=info_id, version=version, uploaded_version__lt=version).update(
            attempts=F("attempts") + 1,
            last_errcode=int(errcode) if str(errcode or "").lstrip("-").isdigit() else None,
            last_error=f"{type(exc).__name__}: {exc}"[:2000],
            body=body,
            state=ShippingInfo.State.FAILED if last_try else ShippingInfo.State.PENDING,
        )
        raise
    ShippingInfo.objects.filter(pk=info_id, version=version).update(
        state=ShippingInfo.State.UPLOADED,
        uploaded_version=version,
        uploaded_at=timezone.now(),
        attempts=F("attempts") + 1,
        last_errcode=0,
        last_error="",
        body=body,
    )


def jump_path_ensure() -> bool:
    """Beat: set ``WECHAT_ORDER_DETAIL_PATH`` with ``set_msg_jump_path`` once per shop (appid)
    and path, backed by a :class:`WechatJumpPath` row; True when it was set now. WeChat's
    errors are logged and tried again at the next run."""
    path = settings.WECHAT_ORDER_DETAIL_PATH
    if not path or WechatJumpPath.objects.filter(appid=settings.WECHAT_APPID, path=path).exists():
        return False
    try:
        wechat.msg_jump_path_set(path)
    except Exception as exc:  # WeChat or the network: the next run tries again
        logger.warning("set_msg_jump_path %s failed: %s", path, exc)
        return False
    WechatJumpPath.objects.get_or_create(appid=settings.WECHAT_APPID, path=path, defaults={"set_at": timezone.now()})
    return True
