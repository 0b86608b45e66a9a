from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.generics import ListAPIView
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.authentication import PublicTokenAuthentication
from apps.catalog.api.serializers import ProductListSerializer
from apps.content import article_views, articles, favourites, home
from apps.content.api.serializers import (
    ArticleCategorySerializer,
    ArticleDetailSerializer,
    ArticleListQuerySerializer,
    ArticleSerializer,
    FavouriteInSerializer,
    FavouriteOutSerializer,
    HomeSerializer,
)
from starmall.api.schema import errors
from starmall.errors import NotFound


class HomeView(APIView):
    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(responses=HomeSerializer)
    def get(self, request):
        return Response(home.home_page())


class ArticleCategoryListView(APIView):
    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(responses=ArticleCategorySerializer(many=True))
    def get(self, request):
        return Response(ArticleCategorySerializer(articles.article_categories(), many=True).data)


class ArticleListView(ListAPIView):
    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]
    serializer_class = ArticleSerializer

    @extend_schema(parameters=[ArticleListQuerySerializer])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        query = ArticleListQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return articles.article_list(category_id=query.validated_data.get("category"))

    def get_serializer(self, *args, **kwargs):
        rows = args[0] if args else []
        kwargs["context"] = {
            **self.get_serializer_context(),
            "pending": article_views.article_views_pending([a.pk for a in rows]),
        }
        return self.serializer_class(*args, **kwargs)


class ArticleDetailView(APIView):
    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(responses={200: ArticleDetailSerializer, **errors(e404="not_found (no such published article)")})
    def get(self, request, article_id: int):
        article = articles.article_get(article_id=article_id)
        if article is None:
            raise NotFound("文章不存在。", article_id=article_id)
        pending = article_views.article_view_count(article_id=article.pk)  # this view included
        return Response(
            ArticleDetailSerializer(
                article, context={"pending": {article.pk: pending}, "products": articles.article_products(article)}
            ).data
        )


class FavouriteListView(ListAPIView):
    serializer_class = ProductListSerializer

    def get_queryset(self):
        return favourites.favourite_products(customer_id=self.request.user.pk)

    @extend_schema(
        request=FavouriteInSerializer,
        responses={
            201: FavouriteOutSerializer,
            200: FavouriteOutSerializer,
            **errors(e404="not_found (no such product on sale)"),
        },
        description="201 when kept now, 200 when it was kept already.",
    )
    def post(self, request):
        data = FavouriteInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        _, created = favourites.favourite_add(customer_id=request.user.pk, **data.validated_data)
        return Response(
            {"product_id": data.validated_data["product_id"]},
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class FavouriteDeleteView(APIView):
    @extend_schema(request=None, responses={204: None})
    def delete(self, request, product_id: int):
        favourites.favourite_remove(customer_id=request.user.pk, product_id=product_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
