from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.orders.api.serializers import OrderSerializer
from apps.orders.reschedule import order_reschedule
from starmall.api import fields
from starmall.api.schema import MAX_ID, errors


class RescheduleInSerializer(serializers.Serializer):
    start = serializers.DateTimeField(
        required=False, help_text="the new start, one GET /teachers/{id}/availability lists (ISO 8601)"
    )
    slot_id = fields.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, help_text="or the new legacy slot (same teacher)"
    )

    def validate(self, data):
        if ("start" in data) == ("slot_id" in data):
            raise serializers.ValidationError({"start": ["start 和 slot_id 须提供其一"]})
        return data


class OrderRescheduleView(APIView):
    """``POST /api/v1/orders/{order_no}/reschedule``: move a paid consultation to another slot."""

    @extend_schema(
        request=RescheduleInSerializer,
        responses={
            200: OrderSerializer,
            **errors(
                e400="invalid",
                e404="not_found",
                e409="slot_unavailable (full, closed, too soon, another teacher's), "
                "invalid_state (not a paid consultation, or the old slot is less than RESCHEDULE_MIN_NOTICE_HOURS away), "
                "limit_exceeded (moved RESCHEDULE_MAX times already)",
            ),
        },
    )
    def post(self, request, order_no: str):
        data = RescheduleInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        order = order_reschedule(
            order_no=order_no,
            slot_id=data.validated_data.get("slot_id"),
            start=data.validated_data.get("start"),
            actor="customer",
            customer_id=request.user.pk,
        )
        return Response(OrderSerializer(order).data)
