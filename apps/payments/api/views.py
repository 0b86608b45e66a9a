from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.orders.api.serializers import OrderSerializer
from apps.orders.models import PayMethod
from apps.payments import services
from apps.payments.wechat import fail_ack
from apps.payments.api.serializers import PayInSerializer, PayOutSerializer, PayStatusSerializer

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


@csrf_exempt
@require_POST
def wechat_notify(request):
    """WeChat Pay payment notification (XML in, XML out; see services.notification_handle)."""
    body = request.body
    if len(body) > MAX_NOTIFY_BYTES:
        return HttpResponse(fail_ack("body too large"), content_type="application/xml")
    return HttpResponse(services.notification_handle(body), content_type="application/xml")
