from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.orders.api.serializers import OrderSerializer
from apps.orders.models import PayMethod
from apps.payments import refunds, services
from apps.payments.api.serializers import (
    PayInSerializer,
    PayOutSerializer,
    PayStatusSerializer,
    RefundInSerializer,
    RefundOutSerializer,
)
from apps.payments.wechat import fail_ack

MAX_NOTIFY_BYTES = 64 * 1024


class OrderPayView(APIView):
    @extend_schema(request=PayInSerializer, responses=PayOutSerializer)
    def post(self, request, order_no: str):
        data = PayInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if data.validated_data["method"] == PayMethod.WECHAT:
            params = services.payment_wechat_start(order_no=order_no, customer_id=request.user.pk)
            return Response({"method": PayMethod.WECHAT, "pay_params": params})
        order = services.payment_balance_pay(order_no=order_no, customer_id=request.user.pk)
        return Response({"method": PayMethod.BALANCE, "order": OrderSerializer(order).data})


class OrderPayStatusView(APIView):
    @extend_schema(responses=PayStatusSerializer)
    def get(self, request, order_no: str):
        return Response(services.payment_status(order_no=order_no, customer_id=request.user.pk))


class OrderRefundView(APIView):
    @extend_schema(request=RefundInSerializer, responses={202: RefundOutSerializer})
    def post(self, request, order_no: str):
        data = RefundInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        after_sale = refunds.refund_request(order_no=order_no, customer_id=request.user.pk, **data.validated_data)
        return Response(RefundOutSerializer(after_sale).data, status=202)


def _xml_view(handler):
    """A WeChat callback: POST only, no CSRF (WeChat signs instead), XML in and out."""

    @csrf_exempt
    @require_POST
    def view(request):
        if len(request.body) > MAX_NOTIFY_BYTES:
            return HttpResponse(fail_ack("body too large"), content_type="application/xml")
        return HttpResponse(handler(request.body), content_type="application/xml")

    view.__doc__ = handler.__doc__
    return view


wechat_notify = _xml_view(services.notification_handle)
wechat_refund_notify = _xml_view(refunds.refund_notification_handle)


