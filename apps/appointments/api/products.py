"""A product's page (``GET /products/<id>``): served from appointments because a consultation's
page carries its teacher's next bookable slots, and catalog sits below appointments."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.authentication import PublicTokenAuthentication
from apps.almanac.exceptions import DateOutOfRange
from apps.appointments import selectors as slot_selectors
from apps.catalog import selectors
from apps.catalog.api.serializers import ProductDetailSerializer
from apps.catalog.models import Kind
from starmall.errors import NotFound


class ProductDetailView(APIView):
    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(
        responses=ProductDetailSerializer,
        parameters=[
            OpenApiParameter("good_for", str, description="consultations: next slots on days good for this activity")
        ],
    )
    def get(self, request, product_id: int):
        product = selectors.product_get(product_id=product_id)
        if product is None:
            raise NotFound("商品不存在。", product_id=product_id)
        context = {}
        teacher = getattr(product, "teacher", None)
        if product.kind == Kind.CONSULTATION and teacher is not None:
            try:
                context["next_slots"] = slot_selectors.slot_next_available(
                    teacher_id=teacher.pk, good_for=request.query_params.get("good_for") or None
                )
            except DateOutOfRange:  # almanac not loaded that far: the product is still shown
                context["next_slots"] = []
        return Response(ProductDetailSerializer(product, context=context).data)
