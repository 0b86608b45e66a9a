from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from apps.orders import reorder, selectors, services, shipments
from apps.orders.api.serializers import (
    ConfirmInSerializer,
    ConfirmOutSerializer,
    CreateInSerializer,
    OrderCountsSerializer,
    OrderListQuerySerializer,
    OrderSerializer,
    ReorderOutSerializer,
    TrackingSerializer,
)
from apps.orders.confirm import order_confirm
from apps.orders.create import order_create
from starmall.api.schema import errors


class OrderCreateThrottle(UserRateThrottle):
    scope = "order_create"


class OrderConfirmView(APIView):
    @extend_schema(
        request=ConfirmInSerializer,
        responses={
            200: ConfirmOutSerializer,
            **errors(
                e400="invalid",
                e404="not_found (SKU not on sale, no such flash sale, group buy, group or bargain "
                "record, not a cart line of the caller)",
                e409="insufficient_stock, slot_unavailable, coupon_unavailable, "
                "limit_exceeded (flash-sale, group-buy limit), invalid_state (flash sale or group buy not live, "
                "group full, ended or joined already, bargain bought or expired)",
            ),
        },
    )
    def post(self, request):
        data = ConfirmInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        draft = order_confirm(customer=request.user, **data.validated_data)
        return Response(ConfirmOutSerializer(draft).data)


class OrderListCreateView(ListAPIView):
    serializer_class = OrderSerializer

    def get_throttles(self):
        return [OrderCreateThrottle()] if self.request.method == "POST" else []

    @extend_schema(parameters=[OrderListQuerySerializer])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        query = OrderListQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return selectors.order_list(customer_id=self.request.user.pk, status=query.validated_data.get("status"))

    @extend_schema(
        request=CreateInSerializer,
        responses={
            201: OrderSerializer,
            200: OrderSerializer,
            **errors(
                e400="invalid",
                e409="insufficient_stock, slot_unavailable, coupon_unavailable, invalid_state, limit_exceeded",
                e410="order_key_expired",
                e429="throttled",
            ),
        },
    )
    def post(self, request):
        data = CreateInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        order, created = order_create(customer=request.user, **data.validated_data)
        return Response(OrderSerializer(order).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class OrderDetailView(APIView):
    @extend_schema(responses={200: OrderSerializer, **errors(e404="not_found (also another customer's order)")})
    def get(self, request, order_no: str):
        order = services.order_get(order_no=order_no, customer_id=request.user.pk)
        return Response(OrderSerializer(order).data)


class OrderReceiveView(APIView):
    @extend_schema(request=None, responses={200: OrderSerializer, **errors(e404="not_found", e409="invalid_state")})
    def post(self, request, order_no: str):
        order = services.order_receive(order_no=order_no, customer_id=request.user.pk)
        return Response(OrderSerializer(order).data)


class OrderTrackingView(APIView):
    @extend_schema(
        responses={
            200: TrackingSerializer,
            **errors(
                e404="not_found",
                e409="invalid_state (not shipped with a tracking number)",
                e503="service_unavailable (the tracking provider is down)",
            ),
        }
    )
    def get(self, request, order_no: str):
        return Response(
            TrackingSerializer(shipments.order_tracking(order_no=order_no, customer_id=request.user.pk)).data
        )


class OrderReorderView(APIView):
    @extend_schema(
        request=None,
        responses={
            200: ReorderOutSerializer,
            **errors(
                e400="invalid (no address)",
                e404="not_found",
                e409="invalid_state (consultation; nothing left on sale), insufficient_stock, limit_exceeded",
            ),
        },
    )
    def post(self, request, order_no: str):
        return Response(ReorderOutSerializer(reorder.order_reorder(order_no=order_no, customer=request.user)).data)


class OrderCountsView(APIView):
    @extend_schema(responses=OrderCountsSerializer)
    def get(self, request):
        return Response(selectors.order_counts(customer_id=request.user.pk))
