"""WeChat's notifications (apps/payments/notifications.py): the audit row is written in the
transaction that applies the notification, so a worker killed between the paid (recharged,
refunded) transition and the audit row keeps neither, and WeChat's next delivery applies it
once with exactly one "applied" row; one table of handlers takes one more entry.

``transaction=True``: the applying transaction commits for real, as in production (inside a
test's transaction a savepoint would roll back either way).
"""

from __future__ import annotations

import pytest
from pay_helpers import pay_result, signed_xml

from apps.accounts.models import WalletEvent
from apps.catalog.models import Product, Sku
from apps.orders.models import FollowUp, Order
from apps.payments import notifications, refunds
from apps.payments.models import Notification, Payment, Recharge, RechargePackage, Refund

pytestmark = pytest.mark.django_db(transaction=True)

SUCCESS = b"<xml><return_code><![CDATA[SUCCESS]]></return_code><return_msg><![CDATA[OK]]></return_msg></xml>"


class Killed(Exception):
    """The worker dies: raised where the audit row is written, after the transition."""


@pytest.fixture
def kill_at_audit_row(monkeypatch):
    """``kill_at_audit_row()``: from now on every audit row of a notification that changed
    something (applied, late, refund closed) raises :class:`Killed` instead of being written;
    ``monkeypatch.undo()`` revives the worker."""
    real = Notification.record.__func__

    def record(cls, **kwargs):
        if kwargs["outcome"] in ("applied", "late", "refund_closed"):
            raise Killed()
        return real(cls, **kwargs)

    return lambda: monkeypatch.setattr(Notification, "record", classmethod(record))


def _outcomes(kind: str = "payment") -> list[str]:
    return list(Notification.objects.filter(kind=kind).order_by("id").values_list("outcome", flat=True))


def _paid_at_wechat(buyer, make_sku, place_order, wechat) -> tuple[dict, Sku, bytes]:
    """A goods order of 128.00 paid at WeChat; returns it, its SKU and the notification's body."""
    sku = make_sku(price_fen=12800, stock=5)
    order = place_order(buyer.api, items=[(sku, 1)])
    assert (
        buyer.api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json").status_code
        == 200
    )
    wechat.control.pay(order["order_no"])
    note = wechat.control.notifications(out_trade_no=order["order_no"])[0]
    return order, sku, note["body"].encode()


def test_payment_killed_before_its_audit_row_keeps_neither_and_the_resend_applies_once(
    buyer, make_sku, place_order, wechat, kill_at_audit_row, monkeypatch
):
    order, sku, body = _paid_at_wechat(buyer, make_sku, place_order, wechat)
    kill_at_audit_row()

    with pytest.raises(Killed):
        notifications.payment_notification_handle(body)

    assert Order.objects.get(order_no=order["order_no"]).status == "unpaid"
    assert Payment.objects.get(out_trade_no=order["order_no"]).status == "pending"
    assert Product.objects.get(pk=sku.product_id).sales == 0
    assert (_outcomes(), FollowUp.objects.count()) == ([], 0)

    monkeypatch.undo()
    assert notifications.payment_notification_handle(body) == SUCCESS  # WeChat sends it again
    assert notifications.payment_notification_handle(body) == SUCCESS  # and once more

    payment = Payment.objects.get(out_trade_no=order["order_no"])
    assert (payment.status, Order.objects.get(order_no=order["order_no"]).status) == ("paid", "paid")
    assert Product.objects.get(pk=sku.product_id).sales == 1
    assert _outcomes() == ["applied", "duplicate"]
    applied = Notification.objects.get(outcome="applied")
    assert (applied.out_trade_no, applied.transaction_id, applied.total_fee) == (
        order["order_no"],
        payment.transaction_id,
        12800,
    )


def test_recharge_killed_before_its_audit_row_credits_nothing_and_the_resend_credits_once(
    make_customer, make_api, wechat, kill_at_audit_row, monkeypatch
):
    customer = make_customer()
    package = RechargePackage.objects.create(pay_fen=10000, bonus_fen=1000, sort=1)
    no = make_api(customer).post("/api/v1/recharges", {"package_id": package.pk}, format="json").json()["recharge_no"]
    wechat.control.pay(no)
    body = wechat.control.notifications(out_trade_no=no)[0]["body"].encode()
    kill_at_audit_row()

    with pytest.raises(Killed):
        notifications.payment_notification_handle(body)

    customer.refresh_from_db()
    assert (Recharge.objects.get(recharge_no=no).status, customer.balance_fen) == ("unpaid", 0)
    assert (WalletEvent.objects.filter(customer=customer).count(), _outcomes()) == (0, [])

    monkeypatch.undo()
    assert notifications.payment_notification_handle(body) == SUCCESS
    assert notifications.payment_notification_handle(body) == SUCCESS

    customer.refresh_from_db()
    assert (Recharge.objects.get(recharge_no=no).status, customer.balance_fen) == ("paid", 11000)
    assert sorted(WalletEvent.objects.filter(customer=customer).values_list("reason", "amount")) == [
        ("bonus", 1000),
        ("recharge", 10000),
    ]
    assert _outcomes() == ["applied", "duplicate"]


def test_refund_killed_before_its_audit_row_stays_submitted_and_the_resend_confirms_once(
    buyer, make_sku, place_order, wechat, kill_at_audit_row, monkeypatch
):
    order, sku, body = _paid_at_wechat(buyer, make_sku, place_order, wechat)
    assert notifications.payment_notification_handle(body) == SUCCESS
    sale = refunds.refund_request(order_no=order["order_no"], customer_id=buyer.customer.pk, reason="不想要了")
    refund = refunds.after_sale_approve(after_sale_id=sale.pk, actor="staff:cs")
    assert refunds.refund_execute(refund_id=refund.pk) == "submitted"
    refund_body = wechat.control.notifications(kind="refund")[0]["body"].encode()
    kill_at_audit_row()
    with pytest.raises(Killed):
        notifications.refund_notification_handle(refund_body)

    assert Refund.objects.get(pk=refund.pk).status == "submitted"
    assert Order.objects.get(order_no=order["order_no"]).status == "refunding"
    assert (Sku.objects.get(pk=sku.pk).stock, Product.objects.get(pk=sku.product_id).sales) == (4, 1)
    assert _outcomes("refund") == []

    monkeypatch.undo()
    assert notifications.refund_notification_handle(refund_body) == SUCCESS
    assert notifications.refund_notification_handle(refund_body) == SUCCESS

    assert Refund.objects.get(pk=refund.pk).status == "success"
    assert Order.objects.get(order_no=order["order_no"]).status == "refunded"
    assert (Sku.objects.get(pk=sku.pk).stock, Product.objects.get(pk=sku.product_id).sales) == (5, 0)
    assert _outcomes("refund") == ["applied", "duplicate"]


def test_one_more_handler_is_one_registered_entry_that_gets_the_shared_checks(db, monkeypatch):
    """A handler registered before "payment" claims its notifications; unknown rows and wrong
    amounts are answered by the shared checks, a match is applied with its audit row."""
    monkeypatch.setattr(notifications, "HANDLERS", dict(notifications.HANDLERS))
    rows = {"T20260101000001": 500}
    applied: list[tuple[str, str]] = []
    notifications.register(
        "test-transfer",
        notifications.Handler(
            callback=notifications.PAY_RESULT,
            claims=lambda fields: fields.get("out_trade_no", "").startswith("T"),
            find=lambda fields: fields["out_trade_no"] if fields["out_trade_no"] in rows else None,
            number="out_trade_no",
            amount="total_fee",
            expected_fen=lambda no: rows[no],
            apply=lambda no, fields: applied.append((no, fields["transaction_id"])) or Notification.Outcome.APPLIED,
        ),
        before="payment",
    )
    # "transfer" is distribution's (registered from its AppConfig.ready(), on its own callback)
    assert list(notifications.HANDLERS) == [
        "recharge",
        "member_card",  # member cards' "M..." (apps.payments.member_cards)
        "test-transfer",
        "payment",
        "refund",
        "transfer",
    ]
    with pytest.raises(ValueError):
        notifications.register("payment", notifications.HANDLERS["payment"])

    def body(out_trade_no: str, total_fee: int) -> bytes:
        return signed_xml(pay_result(out_trade_no, total_fee, transaction_id="4200000001"))

    assert b"unknown out_trade_no" in notifications.payment_notification_handle(body("T20260101000009", 500))
    assert b"total_fee does not match" in notifications.payment_notification_handle(body("T20260101000001", 1))
    assert notifications.payment_notification_handle(body("T20260101000001", 500)) == SUCCESS
    assert applied == [("T20260101000001", "4200000001")]
    assert _outcomes() == ["unknown_order", "amount_mismatch", "applied"]
