from rest_framework import serializers

from apps.orders.api.serializers import OrderSerializer
from apps.orders.models import PayMethod
from starmall.api import fields


class PayInSerializer(serializers.Serializer):
    method = fields.ChoiceField(choices=PayMethod.choices)


class PayParamsSerializer(serializers.Serializer):
    appId = fields.CharField()  # noqa: N815 (wx.requestPayment's names)
    timeStamp = fields.CharField()  # noqa: N815
    nonceStr = fields.CharField()  # noqa: N815
    package = fields.CharField()
    signType = fields.CharField()  # noqa: N815
    paySign = fields.CharField()  # noqa: N815


class PayOutSerializer(serializers.Serializer):
    method = fields.ChoiceField(choices=PayMethod.choices)
    pay_params = PayParamsSerializer(required=False)
    order = OrderSerializer(required=False)


class PayStatusSerializer(serializers.Serializer):
    order_status = fields.CharField()
    payment_status = fields.CharField(help_text="none, pending, paid, closed, unknown or manual")
    refund_status = fields.CharField(allow_null=True, help_text="latest refund: pending ... success, failed")
    message = fields.CharField(help_text='e.g. "paid, order cancelled, refund in progress"')


class RefundInSerializer(serializers.Serializer):
    reason = fields.CharField(max_length=200)
    amount_fen = fields.IntegerField(
        required=False, min_value=1, max_value=2**31 - 1, help_text="fen; default all refundable"
    )


class RefundOutSerializer(serializers.Serializer):
    refund_no = fields.CharField()
    status = fields.CharField(help_text="requested, approved, rejected, refunded or failed")
    amount_fen = fields.IntegerField(help_text="fen")
