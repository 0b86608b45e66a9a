"""The points mall for the mini-program (API.md "Members"): thin views over
``apps.points_mall.selectors`` / ``services``."""

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.points_mall import selectors, services
from apps.points_mall.api.serializers import ExchangeInSerializer, ExchangeSerializer, ItemSerializer
from starmall.api.schema import errors


class ItemListView(APIView):
    """Public, like the catalog: no token needed, and a missing or unknown one is ignored."""

    authentication_classes = []
    permission_classes = [AllowAny]

    @extend_schema(auth=[], responses={200: ItemSerializer(many=True)})
    def get(self, request):
        return Response(ItemSerializer(selectors.items_listed(), many=True).data)


class ExchangeView(APIView):
    @extend_schema(
        request=ExchangeInSerializer,
        responses={
            201: ExchangeSerializer,
            **errors(
                e400="invalid (goods without an address)",
                e404="not_found (no such active item)",
                e409="insufficient_balance (too few points), insufficient_stock (none left), limit_exceeded",
            ),
        },
    )
    def post(self, request, item_id: int):
        data = ExchangeInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        exchange = services.item_exchange(
            item_id=item_id, customer_id=request.user.pk, address_id=data.validated_data.get("address_id")
        )
        return Response(ExchangeSerializer(exchange).data, status=status.HTTP_201_CREATED)
