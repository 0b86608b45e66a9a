from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.catalog.api.serializers import ProductListSerializer
from apps.content.models import Article, ArticleCategory
from apps.content.sanitize import safe_html
from apps.files.services import public_url
from starmall.api import fields
from starmall.api.schema import MAX_ID


class BannerSerializer(serializers.Serializer):
    image_url = fields.CharField(help_text="absolute URL")
    link = fields.CharField(help_text="mini-program page path or URL; may be empty")


class NavSerializer(serializers.Serializer):
    title = fields.CharField()
    icon_url = fields.CharField(help_text="absolute URL")
    link = fields.CharField()


class HomeSerializer(serializers.Serializer):
    banners = BannerSerializer(many=True)
    nav = NavSerializer(many=True)
    hot_search = serializers.ListField(child=fields.CharField())
    notices = serializers.ListField(child=fields.CharField())


class ArticleCategorySerializer(fields.ModelSerializer):
    class Meta:
        model = ArticleCategory
        fields = ["id", "name"]


class ArticleListQuerySerializer(serializers.Serializer):
    category = fields.IntegerField(required=False, min_value=1, max_value=MAX_ID)


class ArticleSerializer(fields.ModelSerializer):
    """A listed article; ``views`` = flushed views + those pending in Redis (``context["pending"]``)."""

    cover_url = serializers.SerializerMethodField(help_text="absolute URL, empty without a cover")
    published_at = serializers.DateTimeField()
    views = serializers.SerializerMethodField()

    class Meta:
        model = Article
        fields = ["id", "title", "cover_url", "summary", "published_at", "views", "category_id"]

    @extend_schema_field({"type": "string"})
    def get_cover_url(self, article) -> str:
        return public_url(article.cover.name) if article.cover else ""

    def get_views(self, article) -> int:
        return article.views + self.context.get("pending", {}).get(article.pk, 0)


class ArticleDetailSerializer(ArticleSerializer):
    content = serializers.SerializerMethodField(help_text="HTML with only safe tags, attributes and URLs")
    products = serializers.SerializerMethodField()

    class Meta(ArticleSerializer.Meta):
        fields = ArticleSerializer.Meta.fields + ["content", "products"]

    def get_content(self, article) -> str:
        return safe_html(article.content)

    @extend_schema_field(ProductListSerializer(many=True))
    def get_products(self, article) -> list[dict]:
        return ProductListSerializer(self.context.get("products", []), many=True).data


class FavouriteInSerializer(serializers.Serializer):
    product_id = fields.IntegerField(min_value=1, max_value=MAX_ID)


class FavouriteOutSerializer(serializers.Serializer):
    product_id = fields.IntegerField()
