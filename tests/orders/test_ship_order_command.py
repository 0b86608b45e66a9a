"""``manage.py ship_order ORDER_NO --carrier CODE --tracking-no NO``: THE shipping service,
one line out, a non-zero exit (CommandError) when refused."""

import io
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.orders.models import FollowUp, Order, Shipment
from apps.payments.models import ShippingInfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "payments"))
from shipping_helpers import wechat_paid  # noqa: E402

pytestmark = pytest.mark.django_db


def ship_order(*args):
    out = io.StringIO()
    call_command("ship_order", *args, stdout=out)
    return out.getvalue()


def test_ship_order_ships_and_records_the_shipping_information(buyer, wechat, deliver, place_order, make_sku):
    order = wechat_paid(buyer, wechat, deliver, place_order, items=[(make_sku(), 1)])
    out = ship_order(order.order_no, "--carrier", "zhongtong", "--tracking-no", "ZT7700012345")
    assert out == f"{order.order_no} shipped: 中通快递 ZT7700012345\n"
    assert Order.objects.get(pk=order.pk).status == "shipped"
    assert Shipment.objects.get(order=order).tracking_no == "ZT7700012345"
    assert ShippingInfo.objects.get(order=order).logistics_type == 1
    assert FollowUp.objects.filter(order=order, kind="shipping_info").count() == 1


def test_ship_order_refusals_exit_non_zero_and_change_nothing(paid, make_sku, place_order, buyer):
    order_json, _ = paid()
    with pytest.raises(CommandError, match="no order NOPE"):
        ship_order("NOPE", "--carrier", "shunfeng", "--tracking-no", "SF1234567890")
    with pytest.raises(CommandError, match="快递单号不正确"):
        ship_order(order_json["order_no"], "--carrier", "shunfeng", "--tracking-no", "SF 12")
    unpaid = place_order(buyer.api, items=[(make_sku(), 1)])
    with pytest.raises(CommandError, match="the order is unpaid"):
        ship_order(unpaid["order_no"], "--carrier", "shunfeng", "--tracking-no", "SF1234567890")
    assert Shipment.objects.count() == 0
    assert set(Order.objects.values_list("status", flat=True)) == {"paid", "unpaid"}
    ship_order(order_json["order_no"], "--carrier", "shunfeng", "--tracking-no", "SF1234567890")
    with pytest.raises(CommandError, match="the order is shipped"):  # twice: refused
        ship_order(order_json["order_no"], "--carrier", "shunfeng", "--tracking-no", "SF1234567891")
    assert list(Shipment.objects.values_list("tracking_no", flat=True)) == ["SF1234567890"]
    assert ShippingInfo.objects.count() == 0  # balance-paid: nothing to report
