"""The customer's cancel of an unpaid order (``POST /orders/<order_no>/cancel``): it lives in
payments because the cancel asks WeChat first (``apps.payments.order_lifecycle.order_cancel``)."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.orders import services as orders
from apps.orders.api.serializers import OrderSerializer
from apps.payments import order_lifecycle
from starmall.api.schema import errors


class OrderCancelView(APIView):
    """Cancel the caller's unpaid order; answers the cancelled order (another customer's: 404)."""

    @extend_schema(
        request=None,
        responses={200: OrderSerializer, **errors(e404="not_found", e409="invalid_state", e503="wechat_unavailable")},
    )
    def post(self, request, order_no: str):
        order = orders.order_get(order_no=order_no, customer_id=request.user.pk)
        order = order_lifecycle.order_cancel(order=order, actor="customer", reason="顾客取消")
        return Response(OrderSerializer(order).data)
