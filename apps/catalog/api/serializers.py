from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.catalog.models import Category, Kind, Product, Sku, Teacher
from apps.files.services import public_url
from starmall.api import fields
from starmall.api.schema import MAX_ID


@extend_schema_field({"type": "string", "description": "absolute URL"})
class PublicUrlField(serializers.Field):
    """A stored picture reference (storage name, path or URL) as an absolute URL."""

    def to_representation(self, value):
        return public_url(value or "")


@extend_schema_field({"type": "array", "items": {"type": "string", "description": "absolute URL"}})
class PublicUrlListField(serializers.Field):
    def to_representation(self, value):
        return [public_url(v) for v in (value or []) if isinstance(v, str)]


class CategorySerializer(fields.ModelSerializer):
    parent_id = fields.IntegerField(allow_null=True)

    class Meta:
        model = Category
        fields = ["id", "name", "parent_id", "kind"]


class ProductListQuerySerializer(serializers.Serializer):
    category = fields.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    q = fields.CharField(required=False, max_length=50, allow_blank=True)
    kind = fields.ChoiceField(choices=Kind.choices, required=False)
    sort = fields.ChoiceField(
        choices=["sales", "price", "-price", "new"],
        required=False,
        help_text="sales: units of paid, not refunded orders, most first; "
        "price / -price: lowest SKU price; new: newest first",
    )
    tag = fields.ChoiceField(choices=["hot", "recommended"], required=False)


class ProductListSerializer(fields.ModelSerializer):
    cover_url = PublicUrlField()
    min_price_fen = fields.IntegerField(allow_null=True, help_text="fen")

    class Meta:
        model = Product
        fields = ["id", "name", "kind", "cover_url", "min_price_fen", "sales"]


class SkuSerializer(fields.ModelSerializer):
    image_url = PublicUrlField(help_text="absolute URL of this combination's picture; empty: use the product's")

    class Meta:
        model = Sku
        fields = ["id", "specs", "price_fen", "member_price_fen", "stock", "image_url"]


class TeacherBriefSerializer(fields.ModelSerializer):
    class Meta:
        model = Teacher
        fields = ["id", "name", "title"]


class SlotBriefSerializer(serializers.Serializer):
    id = fields.IntegerField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()


class ProductDetailSerializer(fields.ModelSerializer):
    cover_url = PublicUrlField()
    images = PublicUrlListField()
    rating = serializers.SerializerMethodField(help_text="average of the visible reviews, one decimal; null without")
    skus = serializers.SerializerMethodField()
    teacher = serializers.SerializerMethodField()
    next_slots = serializers.SerializerMethodField(
        help_text="consultations only: the next bookable slots (on days good for ?good_for= if given)"
    )

    class Meta:
        model = Product
        fields = [
            "id",
            "name",
            "kind",
            "description",
            "cover_url",
            "images",
            "skus",
            "teacher",
            "next_slots",
            "rating",
            "review_count",
        ]

    def get_rating(self, product) -> float | None:
        return product.rating

    def get_skus(self, product) -> list[dict]:
        return SkuSerializer([s for s in product.skus.all() if s.is_active], many=True).data

    def get_teacher(self, product) -> dict | None:
        teacher = getattr(product, "teacher", None)
        return TeacherBriefSerializer(teacher).data if teacher else None

    def get_next_slots(self, product) -> list[dict] | None:
        slots = self.context.get("next_slots")
        return None if slots is None else SlotBriefSerializer(slots, many=True).data


class TeacherSerializer(fields.ModelSerializer):
    product_id = fields.IntegerField(allow_null=True)

    class Meta:
        model = Teacher
        fields = ["id", "name", "title", "product_id"]
