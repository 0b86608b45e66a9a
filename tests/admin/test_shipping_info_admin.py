"""The shipping information in the back office: the order list's column and filter, the order
page's state, the re-upload action and button (``payments.upload_shipping_info``), the
tracking-number correction (``orders.ship_order``)."""

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from admin_helpers import action, texts
from django.urls import reverse

from apps.orders import shipments
from apps.orders.models import Shipment
from apps.payments.models import ShippingInfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "payments"))
from shipping_helpers import run_shipping_followups, wechat_paid  # noqa: E402

pytestmark = pytest.mark.django_db


@pytest.fixture
def shipped(buyer, wechat, deliver, place_order, make_sku):
    """A WeChat-paid goods order shipped with SF, its shipping information uploaded."""
    customer, api, address = buyer
    wechat.state.upsert_user(customer.openid)
    who = SimpleNamespace(customer=customer, api=api)
    order = wechat_paid(who, wechat, deliver, place_order, items=[(make_sku(name="青瓷盖碗"), 1)], address=address)
    assert shipments.order_ship(order=order, actor="staff:t", carrier_code="shunfeng", tracking_no="SF1234567890")
    assert run_shipping_followups(order) == ["done"]
    order.refresh_from_db()
    return order


def test_list_column_and_filter(boss, shipped, wechat):
    changelist = reverse("admin:orders_order_changelist")
    page = boss.get(changelist).content.decode()
    assert "发货信息" in page and "已上传" in page
    ShippingInfo.objects.filter(order=shipped).update(state="failed", last_errcode=10060012, last_error="bad company")
    assert "上传失败：10060012 bad company" in boss.get(changelist).content.decode()
    assert boss.get(changelist, {"shipping_info": "failed"}).context["cl"].result_count == 1
    assert boss.get(changelist, {"shipping_info": "uploaded"}).context["cl"].result_count == 0
    assert boss.get(changelist, {"shipping_info": "none"}).context["cl"].result_count == 0


def test_order_page_shows_the_state_and_the_forms(boss, shipped):
    page = boss.get(reverse("admin:orders_order_change", args=[shipped.pk])).content.decode()
    assert 'id="shipping-info"' in page and "已上传" in page and "快递发货" in page
    assert 'id="shipping-info-reupload"' in page and 'id="shipment-correct"' in page


def test_view_only_staff_cannot_reupload(role_client, shipped, wechat):
    service = role_client("客服")  # orders to look at, no actions
    page = service.get(reverse("admin:orders_order_change", args=[shipped.pk])).content.decode()
    assert "已上传" in page and 'id="shipping-info-reupload"' not in page and 'id="shipment-correct"' not in page
    listing = service.get(reverse("admin:orders_order_changelist"))
    assert "reupload_shipping_info" not in listing.content.decode()
    action(service, "orders.order", "reupload_shipping_info", [shipped.pk])
    assert service.post(reverse("admin:orders_order_shipping_info", args=[shipped.pk])).status_code == 403
    correct = {"carrier": "zhongtong", "tracking_no": "ZT7700001"}
    assert service.post(reverse("admin:orders_order_shipment", args=[shipped.pk]), correct).status_code == 403
    info = ShippingInfo.objects.get(order=shipped)
    assert (info.version, info.state) == (1, "uploaded")
    assert Shipment.objects.get(order=shipped).tracking_no == "SF1234567890"
    assert len(wechat.control.shipping()["uploads"]) == 1


def test_operations_reupload_by_action_and_button(role_client, shipped, wechat):
    ops = role_client("运营")
    response = action(ops, "orders.order", "reupload_shipping_info", [shipped.pk])
    assert texts(response) == [
        ("success", f"{shipped.order_no}: 发货信息将重新上传（第 2 版）"),
        ("success", "重新上传发货信息：成功 1 / 共 1"),
    ]
    ops.post(reverse("admin:orders_order_shipping_info", args=[shipped.pk]))
    info = ShippingInfo.objects.get(order=shipped)
    assert (info.version, info.state) == (3, "pending")
    assert run_shipping_followups(shipped) == ["done", "done"]  # version 2 superseded, version 3 sent
    assert len(wechat.control.shipping()["uploads"]) == 2


def test_operations_correct_the_tracking_number(role_client, shipped, wechat):
    ops = role_client("运营")
    url = reverse("admin:orders_order_shipment", args=[shipped.pk])
    refused = ops.post(url, {"carrier": "zhongtong", "tracking_no": "ZT 77"}, follow=True)
    assert any("未修改快递单号" in text for _, text in texts(refused))
    ops.post(url, {"carrier": "zhongtong", "tracking_no": "ZT7700001"})
    assert (Shipment.objects.get(order=shipped).carrier_code, Shipment.objects.get(order=shipped).tracking_no) == (
        "zhongtong",
        "ZT7700001",
    )
    assert run_shipping_followups(shipped) == ["done"]
    last = wechat.control.shipping()["uploads"][-1]["body"]["shipping_list"][0]
    assert (last["express_company"], last["tracking_no"]) == ("ZTO", "ZT7700001")
    assert ShippingInfo.objects.get(order=shipped).uploaded_version == 2
