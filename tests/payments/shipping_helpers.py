"""Helpers of the shipping-information tests (imported by name)."""

from __future__ import annotations

from apps.orders import followups
from apps.orders.models import FollowUp, Order


def wechat_paid(buyer, wechat, deliver, place_order, *, items, **extra) -> Order:
    """An order of ``buyer`` placed through the API and paid with WeChat (the sandbox pays and
    notifies the shop)."""
    created = place_order(buyer.api, items=items, **extra)
    started = buyer.api.post(f"/api/v1/orders/{created['order_no']}/pay", {"method": "wechat"}, format="json")
    assert started.status_code == 200, started.json()
    wechat.control.pay(created["order_no"])
    assert [a["ok"] for a in deliver()] == [True]
    order = Order.objects.get(order_no=created["order_no"])
    assert order.status == "paid" and order.pay_method == "wechat"
    return order


def run_shipping_followups(order: Order, **kwargs) -> list[str]:
    """Run the order's pending shipping-information follow-ups once each (as the worker does)."""
    pending = FollowUp.objects.filter(order=order, kind=FollowUp.Kind.SHIPPING_INFO, status="pending").order_by("pk")
    return [followups.followup_execute(pk, **kwargs) for pk in pending.values_list("pk", flat=True)]
