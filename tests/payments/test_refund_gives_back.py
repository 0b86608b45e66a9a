"""What a full WeChat refund gives back: the coupon while valid, the points spent,
the units out of sales; the points the order earned die at approval."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.accounts.models import Coupon, Customer, WalletEvent
from apps.accounts.selectors import points_frozen
from apps.catalog.models import Product, Sku
from apps.orders import followups
from apps.orders.models import AfterSale, FollowUp, Order
from apps.payments import refunds

pytestmark = pytest.mark.django_db


def test_full_wechat_refund_returns_coupon_points_and_sales(
    make_customer, make_api, make_sku, address, place_order, wechat, deliver, customer, api
):
    Customer.objects.filter(pk=customer.pk).update(points=300)
    sku = make_sku(price_fen=6000, stock=10)
    coupon = Coupon.objects.create(
        customer=customer,
        title="满100减20",
        discount_fen=2000,
        min_spend_fen=10000,
        valid_until=timezone.now() + dt.timedelta(days=3),
    )
    order = place_order(api, items=[(sku, 2)], address=address, coupon_id=coupon.pk, use_points=300)
    assert order["pay_fen"] == 12000 - 2000 - 300
    api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "wechat"}, format="json")
    wechat.control.pay(order["order_no"])
    deliver()
    award = FollowUp.objects.get(order__order_no=order["order_no"], kind="points_award")
    assert followups.followup_execute(award.pk) == "done"
    assert points_frozen(customer_id=customer.pk) == 97  # 97.00 yuan paid
    assert Product.objects.get(pk=sku.product_id).sales == 2

    assert (
        api.post(f"/api/v1/orders/{order['order_no']}/refund", {"reason": "不想要了"}, format="json").status_code == 202
    )
    refund = refunds.after_sale_approve(after_sale_id=AfterSale.objects.get().pk, actor="staff:t")
    assert points_frozen(customer_id=customer.pk) == 0  # died at approval
    assert refunds.refund_execute(refund_id=refund.pk) == "submitted"
    deliver()  # WeChat's refund notification
    assert Order.objects.get(order_no=order["order_no"]).status == "refunded"

    assert (Coupon.objects.get(pk=coupon.pk).status, Coupon.objects.get(pk=coupon.pk).used_order_no) == (
        "available",
        "",
    )
    assert Customer.objects.get(pk=customer.pk).points == 300
    assert Product.objects.get(pk=sku.product_id).sales == 0
    assert Sku.objects.get(pk=sku.pk).stock == 10
    assert list(
        WalletEvent.objects.filter(order_no=order["order_no"]).order_by("id").values_list("reason", "amount", "state")
    ) == [("spend", -300, "available"), ("award", 97, "void"), ("return", 300, "available")]
