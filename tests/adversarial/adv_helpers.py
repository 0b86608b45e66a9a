"""Plain helpers for the adversarial suite: error-format checks, signed notifications, and the
conservation checks (stock, slots, money) every scenario ends with."""

from __future__ import annotations

from collections import Counter

from django.conf import settings
from wechatpy.pay.utils import calculate_signature

LIVE = ("unpaid", "paid", "shipped", "completed", "refunding")


# --- HTTP ------------------------------------------------------------------------------------


def assert_error(response, status: int | tuple[int, ...] | None = None, code: str | None = None) -> dict:
    """A 4xx in API.md's ``{"code", "message", "detail"}`` format (never a 500)."""
    assert response.status_code < 500, (response.status_code, response.content[:300])
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    if status is not None:
        statuses = status if isinstance(status, tuple) else (status,)
        assert response.status_code in statuses, (response.status_code, response.content[:300])
    body = response.json()
    assert isinstance(body, dict) and set(body) >= {"code", "message", "detail"}, body
    assert isinstance(body["code"], str) and isinstance(body["message"], str), body
    assert isinstance(body["detail"], dict), body
    if code is not None:
        assert body["code"] == code, body
    return body


def is_ack_success(response) -> bool:
    return response.status_code == 200 and b"<return_code><![CDATA[SUCCESS]]></return_code>" in response.content


def is_ack_fail(response) -> bool:
    return response.status_code == 200 and b"<return_code><![CDATA[FAIL]]></return_code>" in response.content


# --- WeChat notifications --------------------------------------------------------------------


def notify_fields(
    out_trade_no: str, total_fee, transaction_id: str = "4200001234202611301234567890", **changes
) -> dict:
    fields = {
        "appid": settings.WECHAT_APPID,
        "mch_id": settings.WECHAT_MCH_ID,
        "nonce_str": "adv0nce",
        "result_code": "SUCCESS",
        "return_code": "SUCCESS",
        "openid": "oAdversary",
        "trade_type": "JSAPI",
        "bank_type": "OTHERS",
        "total_fee": str(total_fee),
        "cash_fee": str(total_fee),
        "transaction_id": transaction_id,
        "out_trade_no": out_trade_no,
        "time_end": "20261130120000",
    }
    fields.update(changes)
    return fields


def sign(fields: dict, key: str | None = None) -> str:
    return calculate_signature(fields, key or settings.WECHAT_PAY_API_KEY)


def xml_of(fields: dict, cdata: bool = True) -> bytes:
    if cdata:
        return ("<xml>" + "".join(f"<{k}><![CDATA[{v}]]></{k}>" for k, v in fields.items()) + "</xml>").encode()
    return ("<xml>" + "".join(f"<{k}>{v}</{k}>" for k, v in fields.items()) + "</xml>").encode()


def signed_body(fields: dict, key: str | None = None) -> bytes:
    fields = dict(fields)
    fields["sign"] = sign(fields, key)
    return xml_of(fields)


def post_notify(client, body: bytes, content_type: str = "text/xml", path: str = "/api/v1/payments/wechat/notify"):
    return client.post(path, data=body, content_type=content_type)


# --- shop set-ups ----------------------------------------------------------------------------


def pay_wechat(api, wechat, order_no: str) -> None:
    """Start a WeChat payment and have the user pay it (notification left pending)."""
    response = api.post(f"/api/v1/orders/{order_no}/pay", {"method": "wechat"}, format="json")
    assert response.status_code == 200, response.content
    wechat.control.pay(order_no)


# --- conservation ----------------------------------------------------------------------------


def assert_conserved(initial_stock: dict[int, int]) -> None:
    """Stock, slots and money add up (DESIGN.md invariants).

    Stock: for each SKU ``initial = stock + units held``; an order holds its units while live
    (unpaid/paid/shipped/completed/refunding) and, once refunded, unless it was restocked — and
    a refunded order may be restocked only if its goods never left (not shipped, not completed).
    Slots: the live bookings in a slot's time are those pointing at it, at most its capacity.
    Money, per order: what the payments took minus what is reserved for refunds equals
    ``pay_fen`` minus after-sale refunds for a paid order, and 0 for an unpaid or cancelled one. Balance: every balance move has a wallet event.
    """
    from apps.accounts.models import Customer, WalletEvent
    from apps.appointments.models import Booking, Slot
    from apps.appointments.slots import slot_live_bookings
    from apps.catalog.models import Sku
    from apps.orders.models import Order, OrderLine
    from apps.payments.models import Payment, Refund

    held = Counter()
    for line in OrderLine.objects.select_related("order"):
        order = line.order
        goods_left = order.shipped_at is not None or order.completed_at is not None
        if order.status in LIVE or (order.status == "refunded" and goods_left):
            held[line.sku_id] += line.quantity
    for sku_id, initial in initial_stock.items():
        stock = Sku.objects.get(pk=sku_id).stock
        assert stock >= 0
        assert stock + held[sku_id] == initial, f"SKU {sku_id}: stock {stock} + held {held[sku_id]} != {initial}"

    for slot in Slot.objects.all():
        bookings = list(Booking.objects.filter(slot=slot, live=True).values_list("order_no", flat=True))
        assert len(bookings) == slot_live_bookings(slot) <= slot.capacity, (slot.pk, bookings)
        for order_no in bookings:
            order = Order.objects.get(order_no=order_no)
            assert order.status in LIVE or (order.status == "refunded" and order.completed_at), (
                f"slot {slot.pk} still booked by {order.status} order {order_no}"
            )

    for order in Order.objects.all():
        paid = [p for p in Payment.objects.filter(order=order, status="paid")]
        taken = sum(p.total_fee for p in paid)
        reserved = sum(p.refunded_fen for p in paid)
        after_sale = sum(Refund.objects.filter(order=order, reason="after_sale").values_list("refund_fen", flat=True))
        if order.status in ("unpaid", "cancelled"):
            expected = 0
        else:
            expected = order.pay_fen - after_sale
        assert taken - reserved == expected, (
            f"order {order.order_no} ({order.status}): took {taken}, reserved {reserved} for refunds, "
            f"keeps {taken - reserved}, should keep {expected}"
        )

    for customer in Customer.objects.all():
        events = WalletEvent.objects.filter(customer=customer, kind="balance")
        debits = -sum(e.amount for e in events if e.amount < 0)
        balance_paid = sum(
            Payment.objects.filter(order__customer=customer, method="balance", status="paid").values_list(
                "total_fee", flat=True
            )
        )
        assert debits == balance_paid, (customer.pk, debits, balance_paid)
        balance_refunds = sum(
            Refund.objects.filter(order__customer=customer, payment__method="balance", status="success").values_list(
                "refund_fen", flat=True
            )
        )
        credits = sum(e.amount for e in events if e.amount > 0 and e.reason == "refund")
        assert credits == balance_refunds, (customer.pk, credits, balance_refunds)
