"""A product's page (``GET /products/<id>``): served from appointments because a consultation's
page carries its teacher's next bookable slots, and catalog sits below appointments."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.authentication import PublicTokenAuthentication
from apps.almanac import synonyms
from apps.almanac.api.serializers import GoodForField
from apps.almanac.exceptions import DateOutOfRange
from apps.appointments import selectors as slot_selectors
from apps.catalog import selectors
from apps.catalog.api.serializers import ProductDetailSerializer
from apps.catalog.models import Kind
from starmall.errors import NotFound


class ProductQuerySerializer(serializers.Serializer):
    good_for = GoodForField(help_text="consultations: next slots on days good for this activity")


class ProductDetailView(APIView):
    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(
        responses=ProductDetailSerializer,
        parameters=[ProductQuerySerializer],
    )
    def get(self, request, product_id: int):
        query = ProductQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        good_for = query.validated_data.get("good_for") or None
        if good_for:
            synonyms.resolve(good_for)  # an unknown word is 400 for any product, as the schema says
        product = selectors.product_get(product_id=product_id)
        if product is None:
            raise NotFound("商品不存在。", product_id=product_id)
        context = {}
        teacher = getattr(product, "teacher", None)
        if product.kind == Kind.CONSULTATION and teacher is not None:
            try:
                context["next_slots"] = slot_selectors.slot_next_available(teacher_id=teacher.pk, good_for=good_for)
            except DateOutOfRange:  # almanac not loaded that far: the product is still shown
                context["next_slots"] = []
        return Response(ProductDetailSerializer(product, context=context).data)
