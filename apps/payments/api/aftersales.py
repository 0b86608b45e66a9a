"""GET /refunds (the caller's after-sale requests) and POST /refunds/{refund_no}/return."""

from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.orders.models import AfterSale
from apps.orders.shipments import TRACKING_NO
from apps.payments import returns
from starmall.api import fields
from starmall.api.schema import errors


class ReturnParcelSerializer(serializers.Serializer):
    carrier = fields.CharField()
    tracking_no = fields.CharField()


class AfterSaleSerializer(fields.ModelSerializer):
    order_no = fields.CharField(source="order.order_no")
    created_at = serializers.SerializerMethodField()
    reject_reason = serializers.SerializerMethodField(help_text="staff's reason when rejected, else null")
    note = serializers.SerializerMethodField(help_text="staff's note (e.g. where to send the goods), else null")
    # "return" is a Python keyword: the field is declared in get_fields.

    class Meta:
        model = AfterSale
        fields = ["refund_no", "order_no", "status", "amount_fen", "reason", "created_at", "reject_reason", "note"]

    def get_fields(self):
        fields = super().get_fields()
        fields["return"] = serializers.SerializerMethodField(method_name="get_return_parcel")
        return fields

    def get_created_at(self, sale) -> str:
        return timezone.localtime(sale.created_at).isoformat()

    def get_reject_reason(self, sale) -> str | None:
        return (sale.decision_note or "不符合退款条件") if sale.status == AfterSale.Status.REJECTED else None

    def get_note(self, sale) -> str | None:
        return sale.decision_note or None if sale.status != AfterSale.Status.REJECTED else None

    @extend_schema_field(ReturnParcelSerializer(allow_null=True))
    def get_return_parcel(self, sale) -> dict | None:
        if not sale.return_tracking_no:
            return None
        return {"carrier": sale.return_carrier, "tracking_no": sale.return_tracking_no}


class ReturnInSerializer(serializers.Serializer):
    carrier = fields.CharField(max_length=32, help_text="the carrier's name, e.g. 顺丰")
    tracking_no = fields.RegexField(
        rf"^{TRACKING_NO.pattern}$",
        min_length=6,
        max_length=40,
        help_text="6-40 letters, digits or dashes (the carrier's waybill number)",
    )


class RefundListView(ListAPIView):
    serializer_class = AfterSaleSerializer

    def get_queryset(self):
        return AfterSale.objects.filter(order__customer_id=self.request.user.pk).select_related("order").order_by("-id")


class RefundReturnView(APIView):
    @extend_schema(
        request=ReturnInSerializer,
        responses={
            200: AfterSaleSerializer,
            **errors(
                e400="invalid (carrier, tracking_no)",
                e404="not_found",
                e409="invalid_state (the request is not waiting for the goods)",
            ),
        },
    )
    def post(self, request, refund_no: str):
        data = ReturnInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        sale = returns.after_sale_return_sent(refund_no=refund_no, customer_id=request.user.pk, **data.validated_data)
        return Response(AfterSaleSerializer(sale).data)
