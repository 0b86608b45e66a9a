from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.generics import ListAPIView
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.authentication import PublicTokenAuthentication
from apps.catalog.models import Product
from apps.reviews import services
from apps.reviews.api.serializers import ReviewInSerializer, ReviewSerializer
from starmall.api.schema import errors
from starmall.errors import NotFound


class OrderReviewView(APIView):
    @extend_schema(
        request=ReviewInSerializer,
        responses={
            201: ReviewSerializer,
            **errors(
                e400="invalid (rating, images not our uploads)",
                e404="not_found (order or line)",
                e409="invalid_state (order not completed, line already reviewed)",
            ),
        },
    )
    def post(self, request, order_no: str):
        data = ReviewInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        review = services.review_create(order_no=order_no, customer_id=request.user.pk, **data.validated_data)
        review.customer = request.user
        return Response(ReviewSerializer(review).data, status=status.HTTP_201_CREATED)


class ProductReviewListView(ListAPIView):
    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]
    serializer_class = ReviewSerializer

    @extend_schema(responses={200: ReviewSerializer(many=True), **errors(e404="not_found (no such product)")})
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        product_id = self.kwargs["product_id"]
        if not Product.objects.filter(pk=product_id, is_active=True).exists():
            raise NotFound("商品不存在。", product_id=product_id)
        return services.product_reviews(product_id=product_id)
