"""Shipping information to WeChat (小程序发货信息管理): one upload per delivered WeChat-paid
order, through the outbox and the sandbox; retries, the alert, corrections, the jump path."""

import datetime as dt

import pytest
from django.utils import timezone
from shipping_helpers import run_shipping_followups, wechat_paid

from apps.alerts.models import Alert
from apps.logistics import carriers
from apps.orders import shipments
from apps.orders.models import FollowUp, Order
from apps.payments import shipping_info
from apps.payments.models import ShippingInfo, WechatJumpPath

pytestmark = pytest.mark.django_db

MCH_ID = "1900000109"


@pytest.fixture
def paid_by_wechat(buyer, wechat, deliver, place_order, make_sku):
    """``paid_by_wechat(quantity=2, name="青瓷盖碗")`` -> a goods order paid with WeChat."""

    def make(quantity=2, name="青瓷盖碗", **extra):
        sku = make_sku(price_fen=5000, name=name)
        return wechat_paid(buyer, wechat, deliver, place_order, items=[(sku, quantity)], **extra)

    return make


def ship(order, carrier_code="shunfeng", tracking_no="SF1234567890"):
    return shipments.order_ship(order=order, actor="staff:t", carrier_code=carrier_code, tracking_no=tracking_no)


def uploads(wechat, out_trade_no=None):
    return [u for u in wechat.control.shipping()["uploads"] if out_trade_no in (None, u["out_trade_no"])]


def test_express_order_shipped_is_uploaded_once_with_wechats_body(buyer, paid_by_wechat, wechat):
    order = paid_by_wechat()
    assert ShippingInfo.objects.count() == 0  # goods: reported when shipped, not when paid
    assert ship(order) is True
    info = ShippingInfo.objects.get(order=order)
    assert (info.state, info.version, info.logistics_type, info.out_trade_no) == ("pending", 1, 1, order.order_no)
    followup = FollowUp.objects.get(kind="shipping_info")
    assert followup.key == f"shipping_info:{order.order_no}:1"
    assert run_shipping_followups(order) == ["done"]
    [upload] = uploads(wechat)
    body = upload["body"]
    assert body["order_key"] == {"order_number_type": 1, "mchid": MCH_ID, "out_trade_no": order.order_no}
    assert (body["logistics_type"], body["delivery_mode"]) == (1, 1)
    assert body["payer"] == {"openid": buyer.customer.openid}
    assert body["shipping_list"] == [
        {
            "item_desc": "青瓷盖碗*2",
            "tracking_no": "SF1234567890",
            "express_company": "SF",
            "contact": {"receiver_contact": "138****1234"},  # the buyer's address phone 13800001234
        }
    ]
    assert body["upload_time"].endswith("+08:00")
    assert dt.datetime.fromisoformat(body["upload_time"]) <= timezone.now()
    info.refresh_from_db()
    assert (info.state, info.uploaded_version, info.attempts, info.last_errcode) == ("uploaded", 1, 1, 0)
    assert info.body == body and info.uploaded_at is not None
    # the worker's message delivered again, the sweep: nothing more is uploaded
    assert run_shipping_followups(order) == []
    assert len(uploads(wechat)) == 1


@pytest.mark.parametrize("code, company", [("zhongtong", "ZTO"), ("jtexpress", "JTSD"), ("yunda", "YD")])
def test_carrier_codes_are_mapped_to_wechats(paid_by_wechat, wechat, code, company):
    order = paid_by_wechat()
    ship(order, carrier_code=code, tracking_no="7700012345")
    assert run_shipping_followups(order) == ["done"]
    assert uploads(wechat)[0]["body"]["shipping_list"][0]["express_company"] == company


def test_every_carrier_has_a_wechat_delivery_id():
    assert set(carriers.WECHAT_DELIVERY_IDS) == set(carriers.CARRIERS)


def test_item_desc_is_cut_to_120_characters(buyer, wechat, deliver, place_order, make_sku):
    skus = [make_sku(name="很长的商品名" * 15), make_sku(name="另一件长名字的商品" * 10)]  # 90 characters each
    order = wechat_paid(buyer, wechat, deliver, place_order, items=[(skus[0], 1), (skus[1], 2)])
    desc = shipping_info.item_desc(order)
    assert len(desc) == 120 and desc.endswith("等")
    assert desc.startswith("很长的商品名" * 15 + "*1、另一件长名字的商品")
    ship(order)
    assert run_shipping_followups(order) == ["done"]
    assert uploads(wechat)[0]["body"]["shipping_list"][0]["item_desc"] == desc


def test_consultation_paid_is_a_virtual_upload(buyer, wechat, deliver, place_order, consultation):
    order = wechat_paid(buyer, wechat, deliver, place_order, items=[(consultation.sku, 1)], slot=consultation.slots[0])
    info = ShippingInfo.objects.get(order=order)
    assert (info.logistics_type, info.state) == (3, "pending")
    assert run_shipping_followups(order) == ["done"]
    [upload] = uploads(wechat)
    assert upload["body"]["logistics_type"] == 3
    assert upload["body"]["shipping_list"] == [{"item_desc": "命理咨询*1"}]
    assert ShippingInfo.objects.get(order=order).state == "uploaded"


def test_pickup_verified_is_a_type_4_upload(buyer, wechat, deliver, place_order, make_sku, django_user_model):
    from apps.stores.models import Store
    from apps.stores.services import pickup_verify

    store = Store.objects.create(
        name="西湖店", address="文三路100号", phone="0571-1", hours="10-21", lat="30.2", lng="120.1"
    )
    sku = make_sku(price_fen=3600)
    order = wechat_paid(buyer, wechat, deliver, place_order, items=[(sku, 1)], delivery="pickup", store_id=store.pk)
    assert ShippingInfo.objects.count() == 0  # reported when collected
    boss = django_user_model.objects.create_superuser("boss", password="pw-123456")
    pickup_verify(code=Order.objects.get(pk=order.pk).pickup_code, user=boss)
    assert ShippingInfo.objects.get(order=order).logistics_type == 4
    assert run_shipping_followups(order) == ["done"]
    assert uploads(wechat)[0]["body"]["logistics_type"] == 4
    assert "tracking_no" not in uploads(wechat)[0]["body"]["shipping_list"][0]


def test_balance_paid_orders_are_not_reported(paid, wechat):
    order_json, _ = paid()
    order = Order.objects.get(order_no=order_json["order_no"])
    assert ship(order) is True
    assert ShippingInfo.objects.count() == 0
    assert FollowUp.objects.filter(kind="shipping_info").count() == 0
    assert uploads(wechat) == []


def test_hand_delivery_is_reported_as_local_delivery(paid_by_wechat, wechat):
    order = paid_by_wechat()
    assert shipments.order_ship(order=order, actor="staff:t") is True
    assert run_shipping_followups(order) == ["done"]
    assert uploads(wechat)[0]["body"]["logistics_type"] == 2
    assert uploads(wechat)[0]["body"]["shipping_list"] == [{"item_desc": "青瓷盖碗*2"}]


def test_errors_twice_then_uploaded_with_backoff(paid_by_wechat, wechat):
    order = paid_by_wechat()
    ship(order)
    wechat.control.set_faults(upload_shipping_info={"errcode": 10060001, "count": 2})
    now = timezone.now()
    assert run_shipping_followups(order, now=now) == ["pending"]
    info = ShippingInfo.objects.get(order=order)
    assert (info.state, info.attempts, info.last_errcode) == ("pending", 1, 10060001)
    assert "10060001" in info.last_error
    followup = FollowUp.objects.get(kind="shipping_info")
    assert followup.locked_until == now + dt.timedelta(minutes=1)  # backoff: the sweep waits
    assert run_shipping_followups(order, now=now + dt.timedelta(seconds=30)) == ["pending"]  # still waiting
    assert FollowUp.objects.get(pk=followup.pk).attempts == 1
    assert run_shipping_followups(order, now=now + dt.timedelta(minutes=2)) == ["pending"]
    assert FollowUp.objects.get(pk=followup.pk).locked_until == now + dt.timedelta(minutes=4)  # 2 minutes more
    assert run_shipping_followups(order, now=now + dt.timedelta(minutes=5)) == ["done"]
    info.refresh_from_db()
    assert (info.state, info.attempts, info.last_errcode, info.last_error) == ("uploaded", 3, 0, "")
    assert len(uploads(wechat)) == 1  # the refused calls stored nothing; one upload for version 1
    assert wechat.state.api_calls["wxa/sec/order/upload_shipping_info"] == 3


def test_all_tries_fail_then_failed_and_one_alert(paid_by_wechat, wechat):
    order = paid_by_wechat()
    ship(order)
    wechat.control.set_faults(upload_shipping_info={"system_error": True})
    now = timezone.now()
    for attempt in range(shipping_info.RETRY.max_attempts):
        status = run_shipping_followups(order, now=now + dt.timedelta(hours=2 * attempt))
    assert status == ["failed"]
    info = ShippingInfo.objects.get(order=order)
    assert (info.state, info.attempts, info.last_errcode) == ("failed", 8, -1)
    [alert] = Alert.objects.filter(kind=Alert.Kind.FOLLOWUP_FAILED)
    assert alert.key == f"followup:shipping_info:{order.order_no}:1:failed"
    assert order.order_no in alert.title and "上传发货信息" in alert.title
    assert uploads(wechat) == []


def test_corrected_tracking_number_is_uploaded_again(paid_by_wechat, wechat):
    order = paid_by_wechat()
    ship(order)
    assert run_shipping_followups(order) == ["done"]
    order.refresh_from_db()
    assert (
        shipments.shipment_correct(order=order, actor="staff:t", carrier_code="zhongtong", tracking_no="ZT77001")
        is True
    )
    assert (
        shipments.shipment_correct(order=order, actor="staff:t", carrier_code="zhongtong", tracking_no="ZT77001")
        is False
    )
    info = ShippingInfo.objects.get(order=order)
    assert (info.version, info.uploaded_version, info.state) == (2, 1, "pending")
    assert run_shipping_followups(order) == ["done"]
    first, second = uploads(wechat)
    assert first["body"]["shipping_list"][0]["tracking_no"] == "SF1234567890"
    assert second["body"]["shipping_list"][0] == {
        "item_desc": "青瓷盖碗*2",
        "tracking_no": "ZT77001",
        "express_company": "ZTO",
        "contact": {"receiver_contact": "138****1234"},
    }
    assert wechat.control.shipping()["orders"][order.order_no]["uploads"] == 2
    info.refresh_from_db()
    assert (info.state, info.uploaded_version) == ("uploaded", 2)
    assert order.events.filter(note__startswith="修改快递单号").count() == 1


def test_a_superseded_version_is_not_uploaded(paid_by_wechat, wechat):
    order = paid_by_wechat()
    ship(order)
    shipments.shipment_correct(order=order, actor="staff:t", carrier_code="shunfeng", tracking_no="SF99990000")
    assert run_shipping_followups(order) == ["done", "done"]  # version 1 skipped, version 2 sent
    [upload] = uploads(wechat)
    assert upload["body"]["shipping_list"][0]["tracking_no"] == "SF99990000"


def test_reupload_service_needs_the_permission(paid_by_wechat, wechat, django_user_model):
    from django.core.exceptions import PermissionDenied

    from starmall.errors import InvalidState

    order = paid_by_wechat()
    viewer = django_user_model.objects.create_user("viewer", password="pw-123456", is_staff=True)
    boss = django_user_model.objects.create_superuser("boss2", password="pw-123456")
    with pytest.raises(InvalidState):  # not shipped yet: nothing to report
        shipping_info.shipping_info_reupload(order_id=order.pk, user=boss, actor="staff:boss2")
    ship(order)
    run_shipping_followups(order)
    with pytest.raises(PermissionDenied):
        shipping_info.shipping_info_reupload(order_id=order.pk, user=viewer, actor="staff:viewer")
    assert ShippingInfo.objects.get(order=order).version == 1
    info = shipping_info.shipping_info_reupload(order_id=order.pk, user=boss, actor="staff:boss2")
    assert (info.version, info.state) == (2, "pending")
    assert run_shipping_followups(order) == ["done"]
    assert len(uploads(wechat)) == 2


def test_jump_path_set_once(wechat, settings, db):
    settings.WECHAT_ORDER_DETAIL_PATH = "pages/order/detail"
    wechat.control.set_faults(set_msg_jump_path={"system_error": True, "count": 1})
    assert shipping_info.jump_path_ensure() is False  # WeChat busy: no row, tried again next time
    assert WechatJumpPath.objects.count() == 0
    assert shipping_info.jump_path_ensure() is True
    assert shipping_info.jump_path_ensure() is False
    assert wechat.control.shipping()["jump_path"] == "pages/order/detail"
    assert wechat.state.api_calls["wxa/sec/order/set_msg_jump_path"] == 2
    assert list(WechatJumpPath.objects.values_list("path", flat=True)) == ["pages/order/detail"]


def test_a_v3_payment_is_reported_like_a_v2_one(buyer, wechat, v3pay, place_order, make_sku):
    """The sandbox knows v3 trades from the shared trade store: a v3-paid order ships and uploads."""
    created = place_order(buyer.api, items=[(make_sku(price_fen=5000), 1)])
    started = buyer.api.post(f"/api/v1/orders/{created['order_no']}/pay", {"method": "wechat"}, format="json")
    assert started.status_code == 200, started.json()
    wechat.control.pay(created["order_no"])
    assert [a["ok"] for a in v3pay.deliver()] == [True]
    order = Order.objects.get(order_no=created["order_no"])
    assert (order.status, order.payments.get().api) == ("paid", "v3")
    ship(order, carrier_code="yuantong", tracking_no="YT7700012345")
    assert run_shipping_followups(order) == ["done"]
    [upload] = uploads(wechat)
    assert upload["body"]["order_key"]["out_trade_no"] == order.order_no
    assert upload["body"]["shipping_list"][0]["express_company"] == "YTO"
    assert ShippingInfo.objects.get(order=order).state == "uploaded"
