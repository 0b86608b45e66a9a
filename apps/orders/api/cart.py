"""The cart API (API.md Additions, "Cart"): GET /cart, POST /cart/items, PATCH and DELETE
/cart/items/{id}. Views validate, call one service of ``apps.orders.cart``, serialize."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.orders import cart
from apps.orders.models import CartItem
from starmall.api import fields
from starmall.api.schema import MAX_ID, errors
from starmall.errors import NotFound


class CartItemSerializer(serializers.Serializer):
    id = fields.IntegerField()
    sku_id = fields.IntegerField()
    product_id = fields.IntegerField(source="sku.product_id")
    name = fields.CharField(source="sku.product.name")
    specs = serializers.DictField(source="sku.specs")
    price_fen = fields.IntegerField(source="sku.price_fen", help_text="fen, the SKU's price now")
    quantity = fields.IntegerField()
    stock = serializers.SerializerMethodField(help_text="units on hand now (0 when off sale)")
    available = serializers.SerializerMethodField(
        help_text="false when the SKU or product is off sale or has fewer units than quantity"
    )

    def get_stock(self, item: CartItem) -> int:
        on_sale = item.sku.is_active and item.sku.product.is_active
        return max(item.sku.stock, 0) if on_sale else 0

    def get_available(self, item: CartItem) -> bool:
        return cart.cart_item_available(item)


class CartSerializer(serializers.Serializer):
    items = CartItemSerializer(many=True)
    count = fields.IntegerField(help_text="number of lines")
    quantity_total = fields.IntegerField(help_text="units in all lines")


class CartAddSerializer(serializers.Serializer):
    sku_id = fields.IntegerField(min_value=1, max_value=MAX_ID)
    quantity = fields.IntegerField(min_value=1, max_value=cart.MAX_QUANTITY)


class CartQuantitySerializer(serializers.Serializer):
    quantity = fields.IntegerField(min_value=1, max_value=cart.MAX_QUANTITY)


class CartView(APIView):
    @extend_schema(responses={200: CartSerializer})
    def get(self, request):
        items = list(cart.cart_list(customer_id=request.user.pk))
        return Response(
            CartSerializer(
                {
                    "items": items,
                    "count": len(items),
                    "quantity_total": sum(i.quantity for i in items),
                }
            ).data
        )


class CartItemAddView(APIView):
    @extend_schema(
        request=CartAddSerializer,
        responses={
            201: CartItemSerializer,
            **errors(
                e400="invalid (a consultation; a quantity outside 1..999)",
                e404="not_found (SKU not on sale)",
                e409="insufficient_stock (the line would exceed the stock), limit_exceeded (the line past 999 units; 50 lines)",
            ),
        },
    )
    def post(self, request):
        data = CartAddSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item = cart.cart_item_add(customer_id=request.user.pk, **data.validated_data)
        return Response(CartItemSerializer(item).data, status=status.HTTP_201_CREATED)


class CartItemView(APIView):
    @extend_schema(
        request=CartQuantitySerializer,
        responses={
            200: CartItemSerializer,
            **errors(
                e400="invalid (a quantity outside 1..999)",
                e404="not_found (no such line of the caller)",
                e409="insufficient_stock",
            ),
        },
    )
    def patch(self, request, item_id: int):
        data = CartQuantitySerializer(data=request.data, partial=True)  # PATCH: {} changes nothing
        data.is_valid(raise_exception=True)
        if "quantity" in data.validated_data:
            item = cart.cart_item_update(customer_id=request.user.pk, item_id=item_id, **data.validated_data)
        else:
            item = cart.cart_list(customer_id=request.user.pk).filter(pk=item_id).first()
            if item is None:
                raise NotFound("购物车中没有这一项。", item_id=item_id)
        return Response(CartItemSerializer(item).data)

    @extend_schema(responses={204: None, **errors(e404="not_found (no such line of the caller)")})
    def delete(self, request, item_id: int):
        cart.cart_item_delete(customer_id=request.user.pk, item_id=item_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
