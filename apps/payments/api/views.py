import logging

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.decorators import (
    api_view,
    authentication_classes,
    permission_classes,
)
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.orders.api.serializers import OrderSerializer
from apps.orders.models import PayMethod
from apps.payments import balance, notifications, refunds, services
from apps.payments.api.serializers import (
    PayInSerializer,
    PayOutSerializer,
    PayStatusSerializer,
    RefundInSerializer,
    RefundOutSerializer,
)
from apps.payments.models import InvalidNotificationDay, Notification
from apps.payments.wechat import fail_ack
from starmall.api.middleware import content_length
from starmall.api.schema import errors
from starmall.errors import DatabaseBusy
from starmall.locking import is_lock_conflict

logger = logging.getLogger(__name__)

MAX_NOTIFY_BYTES = 64 * 1024


class OrderPayView(APIView):
    @extend_schema(
        request=PayInSerializer,
        responses={
            200: PayOutSerializer,
            **errors(e404="not_found", e409="invalid_state, insufficient_balance", e503="wechat_unavailable"),
        },
    )
    def post(self, request, order_no: str):
        data = PayInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if data.validated_data["method"] == PayMethod.WECHAT:
            params = services.payment_wechat_start(order_no=order_no, customer_id=request.user.pk)
            return Response({"method": PayMethod.WECHAT, "pay_params": params})
        order = balance.payment_balance_pay(order_no=order_no, customer_id=request.user.pk)
        return Response({"method": PayMethod.BALANCE, "order": OrderSerializer(order).data})


class OrderPayStatusView(APIView):
    @extend_schema(responses=PayStatusSerializer)
    def get(self, request, order_no: str):
        return Response(services.payment_status(order_no=order_no, customer_id=request.user.pk))


class OrderRefundView(APIView):
    @extend_schema(
        request=RefundInSerializer,
        responses={
            202: RefundOutSerializer,
            **errors(e400="invalid (amount_fen)", e404="not_found", e409="invalid_state"),
        },
    )
    def post(self, request, order_no: str):
        data = RefundInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        after_sale = refunds.refund_request(order_no=order_no, customer_id=request.user.pk, **data.validated_data)
        return Response(RefundOutSerializer(after_sale).data, status=202)


def _xml_view(handler, summary: str, kind: str):
    """A WeChat callback: POST only, no token or CSRF (WeChat signs or encrypts), XML in and out.

    A body over ``MAX_NOTIFY_BYTES`` (by Content-Length, before reading it) is no notification
    of WeChat's: counted as invalid and answered with WeChat's FAIL XML, HTTP 200 like every
    FAIL here (WeChat reads any answer but SUCCESS as "send again"; JSON would mean nothing to it).
    So is a notification the database was too busy for (a lock conflict that survived the
    service's one retry: ``starmall.locking``): nothing was applied, WeChat sends it again.
    """

    @extend_schema(
        summary=summary,
        request={"text/xml": OpenApiTypes.STR},
        responses={
            (200, "application/xml"): OpenApiResponse(
                OpenApiTypes.STR,
                description="SUCCESS; FAIL for a notification we cannot trust or match, "
                f"or a body over {MAX_NOTIFY_BYTES} bytes (WeChat sends again)",
            )
        },
        auth=[],
        description=handler.__doc__,
    )
    @api_view(["POST"])
    @authentication_classes([])
    @permission_classes([AllowAny])
    def view(request):
        if content_length(request) > MAX_NOTIFY_BYTES or len(request.body) > MAX_NOTIFY_BYTES:
            InvalidNotificationDay.count_one(kind=kind)
            return HttpResponse(fail_ack("body too large"), content_type="application/xml")
        try:
            answer = handler(request.body)
        except Exception as exc:
            # The database gave the transaction up twice (starmall.locking): nothing was kept;
            # FAIL makes WeChat send the notification again, a JSON 503 would mean nothing to it.
            if not (isinstance(exc, DatabaseBusy) or is_lock_conflict(exc)):
                raise
            logger.warning("%s notification answered FAIL, database busy: %s", kind, exc)
            answer = fail_ack("busy, please send again")
        return HttpResponse(answer, content_type="application/xml")

    return view


wechat_notify = _xml_view(
    notifications.payment_notification_handle,
    "WeChat Pay payment notification (called by WeChat)",
    Notification.Kind.PAYMENT,
)
wechat_refund_notify = _xml_view(
    notifications.refund_notification_handle,
    "WeChat Pay refund notification (called by WeChat)",
    Notification.Kind.REFUND,
)


def _v3_view(callback: notifications.Callback, summary: str):
    """A Pay API v3 callback (JSON signed in the ``Wechatpay-*`` headers, an AES-GCM
    ``resource``): POST only, no token or CSRF. 204 once handled (applied or a duplicate); 4xx
    ``{"code": "FAIL", "message"}`` (Chinese) for anything refused, nothing changed; a body
    over ``MAX_NOTIFY_BYTES`` 413. Checked and applied through the one table of handlers."""

    @extend_schema(
        summary=summary,
        description=(
            "Checked and applied through payments' table of WeChat callbacks "
            "(apps.payments.notifications, the same handlers as the v2 callbacks): one audit row "
            "(微信通知) per delivery."
        ),
        request={"application/json": OpenApiTypes.OBJECT},
        responses={
            204: OpenApiResponse(description="handled (applied, or a duplicate of one applied before)"),
            **errors(
                e400="FAIL (WeChat v3's code; message in Chinese): bad signature, serial or timestamp, an "
                "undecryptable resource, a number that is not ours or a wrong amount (WeChat sends again)",
                e413="FAIL: body too large",
                e503="service_unavailable (the database gave the transaction up twice; WeChat sends again)",
            ),
        },
        auth=[],
    )
    @api_view(["POST"])
    @authentication_classes([])
    @permission_classes([AllowAny])
    def view(request):
        if content_length(request) > MAX_NOTIFY_BYTES or len(request.body) > MAX_NOTIFY_BYTES:
            InvalidNotificationDay.count_one(kind=callback.kind)
            return HttpResponse(callback.fail("body too large"), status=413, content_type=callback.content_type)
        answer = notifications.notification_handle(callback, request.body, request.headers)
        return HttpResponse(answer.body, status=answer.status, content_type=answer.content_type)

    return view


wechat_v3_notify = _v3_view(notifications.PAY_RESULT_V3, "WeChat Pay API v3 payment notification (called by WeChat)")
wechat_v3_refund_notify = _v3_view(
    notifications.REFUND_RESULT_V3, "WeChat Pay API v3 refund notification (called by WeChat)"
)
