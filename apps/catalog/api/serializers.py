from rest_framework import serializers

from apps.catalog.models import Category, Kind, Product, Sku, Teacher
from starmall.api.schema import MAX_ID


class CategorySerializer(serializers.ModelSerializer):
    parent_id = serializers.IntegerField(allow_null=True)

    class Meta:
        model = Category
        fields = ["id", "name", "parent_id", "kind"]


class ProductListQuerySerializer(serializers.Serializer):
    category = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    q = serializers.CharField(required=False, max_length=50, allow_blank=True)
    kind = serializers.ChoiceField(choices=Kind.choices, required=False)


class ProductListSerializer(serializers.ModelSerializer):
    min_price_fen = serializers.IntegerField(allow_null=True, help_text="fen")

    class Meta:
        model = Product
        fields = ["id", "name", "kind", "cover_url", "min_price_fen", "sales"]


class SkuSerializer(serializers.ModelSerializer):
    class Meta:
        model = Sku
        fields = ["id", "specs", "price_fen", "stock"]


class TeacherBriefSerializer(serializers.ModelSerializer):
    class Meta:
        model = Teacher
        fields = ["id", "name", "title"]


class SlotBriefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()


class ProductDetailSerializer(serializers.ModelSerializer):
    skus = serializers.SerializerMethodField()
    teacher = serializers.SerializerMethodField()
    next_slots = serializers.SerializerMethodField(
        help_text="consultations only: the next bookable slots (on days good for ?good_for= if given)"
    )

    class Meta:
        model = Product
        fields = ["id", "name", "kind", "description", "cover_url", "images", "skus", "teacher", "next_slots"]

    def get_skus(self, product) -> list[dict]:
        return SkuSerializer([s for s in product.skus.all() if s.is_active], many=True).data

    def get_teacher(self, product) -> dict | None:
        teacher = getattr(product, "teacher", None)
        return TeacherBriefSerializer(teacher).data if teacher else None

    def get_next_slots(self, product) -> list[dict] | None:
        slots = self.context.get("next_slots")
        return None if slots is None else SlotBriefSerializer(slots, many=True).data


class TeacherSerializer(serializers.ModelSerializer):
    product_id = serializers.IntegerField(allow_null=True)

    class Meta:
        model = Teacher
        fields = ["id", "name", "title", "product_id"]
