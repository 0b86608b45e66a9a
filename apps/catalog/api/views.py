from drf_spectacular.utils import extend_schema
from rest_framework.generics import ListAPIView
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.authentication import PublicTokenAuthentication
from apps.catalog import selectors
from apps.catalog.api.serializers import (
    CategorySerializer,
    ProductListQuerySerializer,
    ProductListSerializer,
    TeacherSerializer,
)


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
            sort=query.validated_data.get("sort", ""),
            tag=query.validated_data.get("tag", ""),
        )


class TeacherListView(APIView):
    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(responses=TeacherSerializer(many=True))
    def get(self, request):
        return Response(TeacherSerializer(selectors.teacher_list(), many=True).data)
