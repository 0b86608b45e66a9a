from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.generics import ListAPIView
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.authentication import PublicTokenAuthentication
from apps.almanac.exceptions import DateOutOfRange
from apps.appointments import selectors as slot_selectors
from apps.catalog import selectors
from apps.catalog.api.serializers import (
    CategorySerializer,
    ProductDetailSerializer,
    ProductListQuerySerializer,
    ProductListSerializer,
    TeacherSerializer,
)
from apps.catalog.models import Kind
from starmall.errors import NotFound


class CategoryListView(APIView):
    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(responses=CategorySerializer(many=True))
    def get(self, request):
        return Response(CategorySerializer(selectors.category_list(), many=True).data)


class ProductListView(ListAPIView):
    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]
    serializer_class = ProductListSerializer

    @extend_schema(parameters=[ProductListQuerySerializer])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        query = ProductListQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return selectors.product_list(
            category_id=query.validated_data.get("category"),
            q=query.validated_data.get("q", ""),
            kind=query.validated_data.get("kind", ""),
        )


class ProductDetailView(APIView):
    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(
        responses=ProductDetailSerializer,
        parameters=[OpenApiParameter("good_for", str, description="consultations: next slots on days good for this activity")],
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


class TeacherListView(APIView):
    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(responses=TeacherSerializer(many=True))
    def get(self, request):
        return Response(TeacherSerializer(selectors.teacher_list(), many=True).data)
