"""The order workbench: status tabs with counts, search by tracking number, the compact order
page, the merchant remark, 改价 before payment (WeChat's trade closed, a new out_trade_no with the
new amount), the address before shipping, the packing slip — each gated by its permission."""

from __future__ import annotations

import re

import pytest

from apps.orders import shipments
from apps.orders.models import Order, OrderEvent, OrderStatus
from apps.payments.models import Payment, PaymentStatus

pytestmark = pytest.mark.django_db


def _count(html: str, tab: str) -> int:
    return int(re.search(rf'data-count="{tab}">(\d+)<', html).group(1))


def test_tabs_count_orders_per_status_and_filter_the_list(boss, paid_orders, buyer, goods_sku, place_order):
    paid = paid_orders(3)
    shipments.order_ship(order=paid[0], actor="staff:boss", carrier_code="shunfeng", tracking_no="SF1234567890")
    _, api, address = buyer
    unpaid = place_order(api, items=[(goods_sku, 1)], address=address)
    api.post(f"/api/v1/orders/{paid[2].order_no}/refund", {"reason": "不想要了"}, format="json")
    html = boss.get("/admin/orders/order/").content.decode()
    assert 'id="order-tabs"' in html
    assert (
        _count(html, "unpaid"),
        _count(html, "to_ship"),
        _count(html, "shipped"),
        _count(html, "refunding"),
        _count(html, "completed"),
    ) == (1, 2, 1, 1, 0)
    listed = boss.get("/admin/orders/order/", {"tab": "to_ship"}).content.decode()
    assert paid[1].order_no in listed and paid[2].order_no in listed
    assert paid[0].order_no not in listed and unpaid["order_no"] not in listed
    found = boss.get("/admin/orders/order/", {"q": "SF1234567890"}).content.decode()
    assert paid[0].order_no in found and paid[1].order_no not in found


def test_search_by_phone_and_nickname(boss, paid_orders, buyer):
    [order] = paid_orders(1)
    customer = buyer[0]
    for term in (customer.phone or "", customer.nickname or ""):
        if term:
            assert order.order_no in boss.get("/admin/orders/order/", {"q": term}).content.decode()


def test_the_order_page_is_one_compact_summary(boss, paid_orders):
    [order] = paid_orders(1)
    html = boss.get(f"/admin/orders/order/{order.pk}/change/").content.decode()
    for part in (
        'id="order-summary"',
        'id="order-lines"',
        'id="order-log"',
        'id="remark-form"',
        'id="address-form"',
        "打印配货单",
        "60.00",
    ):
        assert part in html, part
    assert 'id="price-form"' not in html  # paid: no 改价


def test_merchant_remark_is_saved_and_logged_by_its_permission(make_staff, paid_orders):
    [order] = paid_orders(1)
    staff = make_staff("orders.edit_merchant_remark", view_all=True)
    response = staff.post(f"/admin/orders/order/{order.pk}/remark/", {"text": "加急，送礼包装"})
    assert response.status_code == 302
    order.refresh_from_db()
    assert order.merchant_remark == "加急，送礼包装"
    assert (
        OrderEvent.objects.filter(
            order=order, note="商家备注：加急，送礼包装", actor=f"staff:{staff.user.username}"
        ).count()
        == 1
    )
    viewer = make_staff(view_all=True)
    assert viewer.post(f"/admin/orders/order/{order.pk}/remark/", {"text": "x"}).status_code == 403
    order.refresh_from_db()
    assert order.merchant_remark == "加急，送礼包装"  # refused: the service checks the permission
    assert 'id="remark-form"' not in viewer.get(f"/admin/orders/order/{order.pk}/change/").content.decode()


def test_address_changes_before_shipping_only(make_staff, paid_orders):

    [order] = paid_orders(1)
    ops = make_staff("orders.edit_address", "orders.ship_order", view_all=True)
    new = {
        "name": "李四",
        "phone": "13900000000",
        "province": "江苏省",
        "city": "南京市",
        "district": "鼓楼区",
        "detail": "中山路1号",
        "reason": "顾客来电",
    }
    ops.post(f"/admin/orders/order/{order.pk}/address/", new)
    order.refresh_from_db()
    assert order.address == {k: v for k, v in new.items() if k != "reason"}
    event = OrderEvent.objects.filter(order=order, note__startswith="修改收货地址").get()
    assert "李四 13900000000 江苏省南京市鼓楼区中山路1号" in event.note and "顾客来电" in event.note
    shipments.order_ship(order=order, actor="staff:x", carrier_code="shunfeng", tracking_no="SF1234567891")
    ops.post(f"/admin/orders/order/{order.pk}/address/", {**new, "name": "王五"})
    order.refresh_from_db()
    assert order.address["name"] == "李四"  # shipped: refused
    assert OrderEvent.objects.filter(order=order, note__startswith="修改收货地址").count() == 1


def test_price_change_closes_the_wechat_trade_and_the_next_pay_uses_a_new_out_trade_no(
    wechat, buyer, goods_sku, place_order, make_staff
):
    _, api, address = buyer
    placed = place_order(api, items=[(goods_sku, 1)], address=address)
    no = placed["order_no"]
    assert api.post(f"/api/v1/orders/{no}/pay", {"method": "wechat"}, format="json").status_code == 200
    before = Order.objects.get(order_no=no).pay_fen  # 60.00 goods + freight
    assert wechat.state.trades[no].total_fee == before
    finance = make_staff("orders.change_price", view_all=True)
    order = Order.objects.get(order_no=no)
    assert 'id="price-form"' in finance.get(f"/admin/orders/order/{order.pk}/change/").content.decode()
    confirm = finance.post(f"/admin/orders/order/{order.pk}/price/", {"pay_yuan": "50.00", "reason": "老顾客优惠"})
    assert confirm.status_code == 200 and "确认改价" in confirm.content.decode()  # the confirmation page first
    assert Order.objects.get(pk=order.pk).pay_fen == before and wechat.state.trades[no].total_fee == before
    finance.post(
        f"/admin/orders/order/{order.pk}/price/", {"pay_yuan": "50.00", "reason": "老顾客优惠", "confirm": "1"}
    )
    order.refresh_from_db()
    assert (order.status, order.pay_fen, order.adjust_fen, order.goods_fen) == (
        OrderStatus.UNPAID,
        5000,
        5000 - before,
        6000,
    )
    assert order.pay_fen == order.goods_fen + order.freight_fen - order.coupon_fen - order.points_fen + order.adjust_fen
    assert Payment.objects.get(out_trade_no=no).status == PaymentStatus.CLOSED
    event = OrderEvent.objects.get(order=order, note__startswith="改价")
    assert (
        event.note == f"改价：{before / 100:.2f} 元 → 50.00 元；原因：老顾客优惠"
        and event.actor == f"staff:{finance.user.username}"
    )
    assert api.post(f"/api/v1/orders/{no}/pay", {"method": "wechat"}, format="json").status_code == 200
    assert Payment.objects.get(order=order, status=PaymentStatus.PENDING).out_trade_no == f"{no}P2"
    assert wechat.state.trades[f"{no}P2"].total_fee == 5000


def test_price_change_needs_its_permission_a_reason_and_an_unpaid_order(
    wechat, make_staff, paid_orders, buyer, goods_sku, place_order
):
    _, api, address = buyer
    unpaid = Order.objects.get(order_no=place_order(api, items=[(goods_sku, 1)], address=address)["order_no"])
    viewer = make_staff(view_all=True)
    assert (
        viewer.post(f"/admin/orders/order/{unpaid.pk}/price/", {"pay_yuan": "1.00", "reason": "x"}).status_code == 403
    )
    finance = make_staff("orders.change_price", view_all=True)
    finance.post(f"/admin/orders/order/{unpaid.pk}/price/", {"pay_yuan": "1.00", "reason": "", "confirm": "1"})
    finance.post(f"/admin/orders/order/{unpaid.pk}/price/", {"pay_yuan": "0.001", "reason": "x", "confirm": "1"})
    before = unpaid.pay_fen
    unpaid.refresh_from_db()
    assert (unpaid.pay_fen, unpaid.adjust_fen) == (before, 0)
    [paid] = paid_orders(1)
    finance.post(f"/admin/orders/order/{paid.pk}/price/", {"pay_yuan": "1.00", "reason": "x", "confirm": "1"})
    before = paid.pay_fen
    paid.refresh_from_db()
    assert (paid.pay_fen, paid.adjust_fen) == (before, 0)
    assert not OrderEvent.objects.filter(note__startswith="改价").exists()


def test_packing_slip_prints_lines_and_address(boss, paid_orders, viewer, django_user_model):
    from django.test import Client

    [order] = paid_orders(1)
    html = boss.get(f"/admin/orders/order/{order.pk}/slip/").content.decode()
    assert "配货单" in html and order.order_no in html and "张三 13800000000" in html
    assert html.count("<tr>") == 2  # header + one line
    nobody = django_user_model.objects.create_user("nobody", password="pw-123456", is_staff=True)
    client = Client()
    client.force_login(nobody)
    assert client.get(f"/admin/orders/order/{order.pk}/slip/").status_code == 403


def test_ship_form_lists_carriers_by_name(boss, paid_orders):
    [order] = paid_orders(1)
    html = boss.get(f"/admin/orders/order/{order.pk}/ship/").content.decode()
    assert ">顺丰速运</option>" in html and "(shunfeng)" not in html
