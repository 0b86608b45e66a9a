from rest_framework import serializers

from apps.files.services import public_url
from apps.points_mall.models import Exchange, Item
from starmall.api import fields
from starmall.api.schema import MAX_ID


class ItemSerializer(fields.ModelSerializer):
    """A points-mall item: ``kind`` goods (a SKU sent as a 0-fen order) or coupon."""

    image_url = serializers.SerializerMethodField()
    limit_per_customer = fields.IntegerField(help_text="exchanges per customer; 0: no limit")
    stock = fields.IntegerField(help_text="exchanges left")

    class Meta:
        model = Item
        fields = ["id", "name", "kind", "points", "stock", "limit_per_customer", "image_url"]

    def get_image_url(self, item) -> str:
        return public_url(item.image.name) if item.image else ""


class ExchangeInSerializer(serializers.Serializer):
    address_id = fields.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, help_text="goods: the customer's address; default: their default"
    )


class ExchangeSerializer(fields.ModelSerializer):
    order_no = fields.CharField(allow_null=True, help_text="goods: the paid 0-fen order; null for a coupon")
    coupon_id = fields.IntegerField(allow_null=True, help_text="coupon: the coupon given; null for goods")

    class Meta:
        model = Exchange
        fields = ["exchange_no", "kind", "points", "order_no", "coupon_id"]

    def to_representation(self, exchange):
        data = super().to_representation(exchange)
        data["order_no"] = exchange.order_no or None
        return data
