"""The back office of after-sales: shipping with tracking (order page and bulk), the return step,
rejection with a reason, reviews — through the services, permission-gated, per-object outcomes."""

import pytest
from django.urls import reverse

from apps.accounts.models import Customer
from apps.catalog.models import Product, Sku
from apps.orders import services as orders
from apps.orders import shipments
from apps.orders.models import AfterSale, Order, Shipment
from apps.payments import refunds
from apps.payments.models import Refund
from apps.reviews.models import Review
from tests.admin.admin_helpers import action, request_refund, texts

pytestmark = pytest.mark.django_db


def test_bulk_ship_asks_for_each_tracking_number_then_reports_per_order(make_staff, buyer, paid_orders):
    first, waiting, second = paid_orders(3)
    request_refund(buyer[1], waiting.order_no)
    client = make_staff("orders.ship_order", view_all=True)
    form = action(client, "orders.order", "ship_with_tracking", [first.pk, waiting.pk, second.pk])
    assert form.status_code == 200
    page = form.content.decode()
    assert (
        f'name="tracking_{first.pk}"' in page and ">顺丰速运</option>" in page and "(shunfeng)" not in page
    )  # carriers by name
    assert "张三 13800000000 浙江省杭州市西湖区文三路100号" in page
    done = action(
        client,
        "orders.order",
        "ship_with_tracking",
        [first.pk, waiting.pk, second.pk],
        apply="1",
        **{
            f"carrier_{first.pk}": "shunfeng",
            f"tracking_{first.pk}": "SF1000000001",
            f"carrier_{waiting.pk}": "shunfeng",
            f"tracking_{waiting.pk}": "SF1000000002",
            f"carrier_{second.pk}": "zhongtong",
            f"tracking_{second.pk}": "x",
        },
    )
    assert texts(done) == [
        ("success", f"{first.order_no}: 已发货（顺丰速运 SF1000000001）"),
        ("warning", f"{waiting.order_no}: 未发货：有进行中的退款申请"),
        ("warning", f"{second.order_no}: 未发货：快递单号不正确。"),
        ("warning", "发货：成功 1 / 共 3"),
    ]
    assert [Order.objects.get(pk=o.pk).status for o in (first, waiting, second)] == ["shipped", "paid", "paid"]
    assert list(Shipment.objects.values_list("order_id", "carrier_code", "tracking_no")) == [
        (first.pk, "shunfeng", "SF1000000001")
    ]


def test_order_page_reads_like_a_back_office_and_ships(make_staff, viewer, buyer, paid_orders):
    (order,) = paid_orders(1)
    url = reverse("admin:orders_order_change", args=[order.pk])
    page = viewer.get(url).content.decode()
    assert "张三 13800000000 浙江省杭州市西湖区文三路100号" in page
    assert reverse("admin:orders_order_ship", args=[order.pk]) in page
    ship_url = reverse("admin:orders_order_ship", args=[order.pk])
    assert viewer.get(ship_url).status_code == 403
    assert (
        viewer.post(ship_url, {f"carrier_{order.pk}": "ems", f"tracking_{order.pk}": "EM123456789CN"}).status_code
        == 403
    )
    assert Order.objects.get(pk=order.pk).status == "paid"
    client = make_staff("orders.ship_order", view_all=True)
    assert client.get(ship_url).status_code == 200
    response = client.post(
        ship_url, {f"carrier_{order.pk}": "ems", f"tracking_{order.pk}": "EM123456789CN"}, follow=True
    )
    assert ("success", f"{order.order_no}: 已发货（EMS EM123456789CN）") in texts(response)
    assert Order.objects.get(pk=order.pk).status == "shipped"
    page = client.get(url).content.decode()
    assert "EM123456789CN" in page and "shipped" in page


def test_return_step_in_the_admin_then_refund_restocks(make_staff, buyer, paid_orders, goods_sku):
    customer, api, _ = buyer
    order, other = paid_orders(2)
    for row in (order, other):
        assert shipments.order_ship(order=row, actor="staff:t", carrier_code="yunda", tracking_no="YD0000000001")
        request_refund(api, row.order_no)
    sale, other_sale = AfterSale.objects.get(order=order), AfterSale.objects.get(order=other)
    decider = make_staff("orders.decide_aftersale", view_all=True)
    form = action(decider, "orders.aftersale", "approve_return", [sale.pk])
    assert "给顾客的说明" in form.content.decode()
    done = action(decider, "orders.aftersale", "approve_return", [sale.pk], apply="1", text="寄回杭州仓")
    assert ("success", f"{sale.refund_no}: 已同意退货，等待顾客寄回") in texts(done)
    assert AfterSale.objects.get(pk=sale.pk).decision_note == "寄回杭州仓"
    rejected = action(
        decider, "orders.aftersale", "reject_with_reason", [other_sale.pk], apply="1", text="已超过退货期"
    )
    assert ("success", f"{other_sale.refund_no}: 已拒绝：已超过退货期") in texts(rejected)
    body = api.get("/api/v1/refunds").json()["results"]
    assert {r["refund_no"]: r["reject_reason"] for r in body} == {
        sale.refund_no: None,
        other_sale.refund_no: "已超过退货期",
    }

    # receiving needs its own permission, and the parcel
    assert action(decider, "orders.aftersale", "confirm_return_received", [sale.pk]).status_code == 200
    assert AfterSale.objects.get(pk=sale.pk).status == "approved_return"
    receiver = make_staff("orders.receive_return", view_all=True)
    early = action(receiver, "orders.aftersale", "confirm_return_received", [sale.pk])
    assert ("warning", f"{sale.refund_no}: 未退款：申请状态为「待退货」，需要「退货中」") in texts(early)
    sent = api.post(
        f"/api/v1/refunds/{sale.refund_no}/return", {"carrier": "韵达", "tracking_no": "YD9999999999"}, format="json"
    )
    assert sent.status_code == 200
    stock_before = Sku.objects.get(pk=goods_sku.pk).stock
    received = action(receiver, "orders.aftersale", "confirm_return_received", [sale.pk])
    assert ("success", f"{sale.refund_no}: 已收到退货，退款 70.00 元已提交，商品已回库存") in texts(received)
    refund = Refund.objects.get(after_sale=sale)
    assert refunds.refund_execute(refund_id=refund.pk) == "success"
    assert Sku.objects.get(pk=goods_sku.pk).stock == stock_before + 1
    assert Order.objects.get(pk=order.pk).status == "refunded"
    # two orders of 60.00 + 10.00 freight paid, one refunded in full (freight too)
    assert Customer.objects.get(pk=customer.pk).balance_fen == 1_000_000 - 7000


def test_reviews_reply_and_hide_need_their_permissions(make_staff, viewer, buyer, paid_orders):
    customer, api, _ = buyer
    (order,) = paid_orders(1)
    shipments.order_ship(order=order, actor="staff:t", carrier_code="jd", tracking_no="JD0001234567")
    orders.order_complete(order=Order.objects.get(pk=order.pk), actor="customer")
    line = order.lines.get()
    assert (
        api.post(
            f"/api/v1/orders/{order.order_no}/reviews", {"line_id": line.pk, "rating": 2, "text": "一般"}, format="json"
        ).status_code
        == 201
    )
    review = Review.objects.get()
    assert action(viewer, "reviews.review", "hide", [review.pk]).status_code == 200
    assert Review.objects.get().is_hidden is False
    staff = make_staff("reviews.reply_review", "reviews.moderate_review", view_all=True)
    replied = action(staff, "reviews.review", "reply", [review.pk], apply="1", text="抱歉，已联系您")
    assert ("success", f"#{review.pk}: 已回复") in texts(replied)
    hidden = action(staff, "reviews.review", "hide", [review.pk])
    assert ("success", f"#{review.pk}: 已隐藏") in texts(hidden)
    again = action(staff, "reviews.review", "hide", [review.pk])
    assert ("warning", f"#{review.pk}: 未隐藏：已经是隐藏状态") in texts(again)
    product = Product.objects.get(pk=line.product_id)
    assert (product.review_count, product.rating_total) == (0, 0)
    assert api.get(f"/api/v1/products/{product.pk}/reviews").json()["count"] == 0
    action(staff, "reviews.review", "show", [review.pk])
    assert api.get(f"/api/v1/products/{product.pk}/reviews").json()["results"][0]["reply"] == "抱歉，已联系您"
