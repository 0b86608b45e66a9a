from django.utils import timezone
from rest_framework import serializers

from apps.marketing.models import FlashSale
from starmall.api import fields


class FlashSaleListQuerySerializer(serializers.Serializer):
    status = fields.FilterChoiceField(
        choices=["live", "upcoming"], help_text="live: selling now; upcoming: not started; omitted or empty: both"
    )


class FlashSaleSerializer(fields.ModelSerializer):
    """A 秒杀 as the mini-program lists it (API.md "Flash sales"). Money in fen, times +08:00."""

    product_id = fields.IntegerField(source="sku.product_id")
    name = fields.CharField(source="sku.product.name")
    specs = serializers.DictField(source="sku.specs")
    original_price_fen = fields.IntegerField(source="sku.price_fen", help_text="fen: the SKU's own price")
    starts_at = serializers.SerializerMethodField()
    ends_at = serializers.SerializerMethodField()
    stock = serializers.SerializerMethodField(
        help_text="units still buyable: the sale's own stock, capped by the SKU's stock"
    )

    class Meta:
        model = FlashSale
        fields = [
            "id",
            "title",
            "sku_id",
            "product_id",
            "name",
            "specs",
            "price_fen",
            "original_price_fen",
            "starts_at",
            "ends_at",
            "stock",
            "sold",
            "limit_per_customer",
        ]

    def get_starts_at(self, sale) -> str:
        return timezone.localtime(sale.starts_at).isoformat()

    def get_ends_at(self, sale) -> str:
        return timezone.localtime(sale.ends_at).isoformat()

    def get_stock(self, sale) -> int:
        return max(0, min(sale.stock, sale.sku.stock))
