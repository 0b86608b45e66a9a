from rest_framework import serializers

from apps.orders.api.serializers import OrderSerializer
from apps.orders.models import PayMethod


class PayInSerializer(serializers.Serializer):
    method = serializers.ChoiceField(choices=PayMethod.choices)


class PayParamsSerializer(serializers.Serializer):
    appId = serializers.CharField()  # noqa: N815 (wx.requestPayment's names)
    timeStamp = serializers.CharField()  # noqa: N815
    nonceStr = serializers.CharField()  # noqa: N815
    package = serializers.CharField()
    signType = serializers.CharField()  # noqa: N815
    paySign = serializers.CharField()  # noqa: N815


class PayOutSerializer(serializers.Serializer):
    method = serializers.ChoiceField(choices=PayMethod.choices)
    pay_params = PayParamsSerializer(required=False)
    order = OrderSerializer(required=False)


class PayStatusSerializer(serializers.Serializer):
    order_status = serializers.CharField()
    payment_status = serializers.CharField(help_text="none, pending, paid, closed, unknown or manual")
    refund_status = serializers.CharField(allow_null=True, help_text="latest refund: pending ... success, failed")
    message = serializers.CharField(help_text='e.g. "paid, order cancelled, refund in progress"')


class RefundInSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=200)
    amount_fen = serializers.IntegerField(
        required=False, min_value=1, max_value=2**31 - 1, help_text="fen; default all refundable"
    )


class RefundOutSerializer(serializers.Serializer):
    refund_no = serializers.CharField()
    status = serializers.CharField(help_text="requested, approved, rejected, refunded or failed")
    amount_fen = serializers.IntegerField(help_text="fen")
