from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.marketing import selectors
from apps.marketing.api.serializers import FlashSaleListQuerySerializer, FlashSaleSerializer
from starmall.api.schema import errors


class FlashSaleListView(APIView):
    """Public (API.md): no token needed, and a missing, unknown or expired one is ignored."""

    authentication_classes = []
    permission_classes = [AllowAny]

    @extend_schema(
        auth=[],
        parameters=[FlashSaleListQuerySerializer],
        responses={200: FlashSaleSerializer(many=True), **errors(e400="invalid (status)")},
    )
    def get(self, request):
        query = FlashSaleListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        sales = selectors.flash_sale_list(status=query.validated_data.get("status"))
        return Response(FlashSaleSerializer(sales, many=True).data)
