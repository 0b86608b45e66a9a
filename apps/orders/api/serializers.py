from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.appointments.selectors import booking_json, booking_of, slot_json
from apps.catalog.models import Kind
from apps.marketing import selectors as marketing_selectors
from apps.marketing.models import Group
from apps.orders import shipments
from apps.orders.cart import MAX_LINES, MAX_QUANTITY
from apps.orders.models import Delivery, Order, OrderLine, OrderStatus
from apps.orders.pickup import pickup_json
from starmall.api import fields
from starmall.api.schema import MAX_ID

# A consultation is booked: nothing is shipped or collected, so its delivery is null (API.md:
# "a consultation takes slot_id instead and no address"; WeChat's shipping record calls it virtual).
DELIVERY_HELP = "express or pickup (自提); null for a consultation"
DELIVERY_SCHEMA = {"type": "string", "enum": [Delivery.EXPRESS.value, Delivery.PICKUP.value, None], "nullable": True}


class ConfirmItemSerializer(serializers.Serializer):
    sku_id = fields.IntegerField(min_value=1, max_value=MAX_ID)
    quantity = fields.IntegerField(min_value=1, max_value=MAX_QUANTITY)


@extend_schema_field({"oneOf": [{"type": "integer", "minimum": 0}, {"type": "boolean"}]})
class PointsField(serializers.Field):
    """``use_points``: a number of points (>= 0) or ``true`` for as many as possible."""

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        if isinstance(data, int) and 0 <= data <= MAX_ID:
            return data
        raise serializers.ValidationError("请填写要使用的积分数（>= 0），或 true/false。")

    def to_representation(self, value):
        return value


class ConfirmInSerializer(serializers.Serializer):
    items = ConfirmItemSerializer(
        many=True,
        allow_empty=False,
        max_length=MAX_LINES,
        required=False,
        help_text="exactly one of items and cart_item_ids",
    )
    cart_item_ids = serializers.ListField(
        child=fields.IntegerField(min_value=1, max_value=MAX_ID),
        allow_empty=False,
        max_length=50,
        required=False,
        help_text="ids of the caller's cart lines (GET /cart), instead of items; "
        "the order removes them from the cart when it is created",
    )
    slot_id = fields.IntegerField(required=False, allow_null=True, min_value=1, max_value=MAX_ID)
    start = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="a consultation's start, one listed by GET /teachers/{id}/availability (ISO 8601)",
    )
    address_id = fields.IntegerField(required=False, allow_null=True, min_value=1, max_value=MAX_ID)
    coupon_id = fields.IntegerField(required=False, allow_null=True, min_value=1, max_value=MAX_ID)
    use_points = PointsField(required=False, default=0)
    flash_sale_id = fields.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_ID,
        help_text="秒杀: exactly one item, the sale's SKU; the sale's price; no coupon",
    )
    delivery = fields.ChoiceField(
        choices=Delivery.values,
        required=False,
        default=Delivery.EXPRESS,
        help_text="pickup (自提): with store_id, no address, no freight",
    )
    store_id = fields.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_ID,
        help_text="the pickup store (GET /stores); unknown -> 400 detail.store_id",
    )
    group_buy_id = fields.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_ID,
        help_text="拼团: open a new group of this activity as its leader; one item of its SKU, its price",
    )
    group_id = fields.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_ID,
        help_text="拼团: join this group; one item of its activity's SKU, the activity's price",
    )
    bargain_no = fields.CharField(
        required=False,
        allow_null=True,
        max_length=32,
        help_text="砍价: buy the caller's record at its current price; one unit of its SKU",
    )

    def validate(self, data):
        if "items" not in data and "cart_item_ids" not in data:  # items are the usual way: "required"
            raise serializers.ValidationError({"items": [self.fields["items"].error_messages["required"]]})
        if "items" in data and "cart_item_ids" in data:
            raise serializers.ValidationError({"cart_item_ids": ["items 和 cart_item_ids 只能提供其一"]})
        if data.get("start") is not None and data.get("slot_id") is not None:
            raise serializers.ValidationError({"start": ["start 和 slot_id 只能提供其一"]})
        return data


class DraftLineSerializer(serializers.Serializer):
    sku_id = serializers.IntegerField()
    name = serializers.CharField()
    specs = serializers.DictField()
    price_fen = serializers.IntegerField(help_text="fen")
    quantity = serializers.IntegerField()
    amount_fen = serializers.IntegerField(help_text="fen")


class SlotOutSerializer(serializers.Serializer):
    id = serializers.IntegerField(
        allow_null=True, help_text="null at confirm by start (the grid row is made at create)"
    )
    teacher_id = serializers.IntegerField()
    teacher_name = serializers.CharField()
    start = serializers.CharField(help_text="ISO 8601, +08:00")
    end = serializers.CharField(help_text="ISO 8601, +08:00")


class UsableCouponSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    discount_fen = serializers.IntegerField(help_text="fen this coupon takes off this cart")


class ConfirmOutSerializer(serializers.Serializer):
    order_key = serializers.CharField()
    expires_at = serializers.CharField(help_text="ISO 8601; create before this")
    lines = DraftLineSerializer(many=True)
    goods_fen = serializers.IntegerField()
    freight_fen = serializers.IntegerField()
    coupon_fen = serializers.IntegerField()
    points_fen = serializers.IntegerField()
    points_used = serializers.IntegerField()
    member_fen = serializers.IntegerField(
        default=0, help_text="fen: the member level's discount on goods at their own price (0 without)"
    )
    pay_fen = serializers.IntegerField()
    slot = SlotOutSerializer(allow_null=True)
    address = serializers.DictField(allow_null=True)
    flash_sale_id = serializers.IntegerField(allow_null=True, help_text="the 秒杀 the order buys in, or null")
    usable_coupons = UsableCouponSerializer(
        many=True, required=False, help_text="the caller's coupons for this cart, best first"
    )
    delivery = serializers.SerializerMethodField(help_text=DELIVERY_HELP)
    pickup_store = serializers.DictField(
        required=False, allow_null=True, help_text="pickup: {id, name, address, phone, hours}; else absent"
    )

    @extend_schema_field(DELIVERY_SCHEMA)
    def get_delivery(self, draft) -> str | None:
        if draft.get("kind") == Kind.CONSULTATION:
            return None
        return Delivery.PICKUP if draft.get("pickup_store") else Delivery.EXPRESS

    group_buy_id = serializers.IntegerField(allow_null=True, required=False, help_text="拼团 opened, or null")
    group_id = serializers.IntegerField(allow_null=True, required=False, help_text="拼团 group joined, or null")
    bargain_no = serializers.CharField(allow_null=True, required=False, help_text="砍价 record bought, or null")

    def to_representation(self, draft: dict) -> dict:
        """The draft (``OrderDraft.to_json``) as API.md shows it, written out directly: the
        generic path deep-copies its field objects for every draft, a tenth of a 秒杀 winner's
        CPU in the gate (docs/PERFORMANCE.md). The declared fields above stay the schema;
        ``tests/orders/test_draft_shape.py`` holds this equal to the generic path for every shape."""
        out = {
            "order_key": str(draft["order_key"]),
            "expires_at": str(draft["expires_at"]),
            "lines": [
                {
                    "sku_id": _int(line["sku_id"]),
                    "name": _str(line["name"]),
                    "specs": _dict(line["specs"]),
                    "price_fen": _int(line["price_fen"]),
                    "quantity": _int(line["quantity"]),
                    "amount_fen": _int(line["amount_fen"]),
                }
                for line in draft["lines"]
            ],
        }
        for name in ("goods_fen", "freight_fen", "coupon_fen", "points_fen", "points_used"):
            out[name] = _int(draft[name])
        out["member_fen"] = _int(draft.get("member_fen", 0))
        out["pay_fen"] = _int(draft["pay_fen"])
        out["slot"] = None if draft["slot"] is None else SlotOutSerializer(draft["slot"]).data
        out["address"] = _dict(draft["address"])
        out["flash_sale_id"] = _int(draft["flash_sale_id"])
        if "usable_coupons" in draft:
            out["usable_coupons"] = [
                {"id": _int(c["id"]), "name": _str(c["name"]), "discount_fen": _int(c["discount_fen"])}
                for c in draft["usable_coupons"]
            ]
        out["delivery"] = self.get_delivery(draft)
        # Nullable fields a draft may lack are null (DRF's allow_null); usable_coupons is left out.
        out["pickup_store"] = _dict(draft.get("pickup_store"))
        out["group_buy_id"] = _int(draft.get("group_buy_id"))
        out["group_id"] = _int(draft.get("group_id"))
        out["bargain_no"] = _str(draft.get("bargain_no"))
        return out


def _int(value) -> int | None:
    return None if value is None else int(value)


def _str(value) -> str | None:
    return None if value is None else str(value)


def _dict(value) -> dict | None:
    return None if value is None else {str(k): v for k, v in value.items()}


class CreateInSerializer(serializers.Serializer):
    order_key = fields.CharField(max_length=64)
    remark = fields.CharField(required=False, allow_blank=True, max_length=200, default="")


class OrderLineSerializer(serializers.ModelSerializer):
    class Meta:
        model = OrderLine
        fields = ["id", "sku_id", "product_id", "name", "specs", "price_fen", "quantity", "amount_fen"]


class ShipmentOutSerializer(serializers.Serializer):
    carrier = serializers.CharField()
    carrier_code = serializers.CharField(help_text="Kuaidi100 com code, e.g. shunfeng")
    tracking_no = serializers.CharField()
    shipped_at = serializers.CharField(help_text="ISO 8601, +08:00")


class PickupOutSerializer(serializers.Serializer):
    store = serializers.DictField(help_text="{id, name, address, phone, hours} as at confirm")
    code = serializers.CharField(allow_null=True, help_text="8 digits, given when paid")
    qr = serializers.CharField(
        allow_null=True, help_text="data:image/png;base64,... of the code while it can be collected"
    )
    verified_at = serializers.CharField(allow_null=True, help_text="ISO 8601, +08:00")


class OrderGroupSerializer(serializers.Serializer):
    group_id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Group.Status.choices)
    members = serializers.IntegerField(help_text="seats held by paid orders")
    group_size = serializers.IntegerField()
    expires_at = serializers.CharField(allow_null=True, help_text="ISO 8601, +08:00: leader's payment + hours")


class BookingOutSerializer(serializers.Serializer):
    teacher_id = serializers.IntegerField()
    product_id = serializers.IntegerField(allow_null=True)
    start = serializers.CharField(help_text="ISO 8601, +08:00")
    end = serializers.CharField(help_text="ISO 8601, +08:00")
    attendance = serializers.CharField(help_text='"" (unmarked), attended, no_show or teacher_absent')
    reschedules = serializers.IntegerField()


class OrderSerializer(serializers.ModelSerializer):
    lines = OrderLineSerializer(many=True, read_only=True)
    slot = serializers.SerializerMethodField()
    booking = serializers.SerializerMethodField(help_text="a consultation's booking, null for goods")
    created_at = serializers.SerializerMethodField()
    pay_deadline = serializers.SerializerMethodField()
    paid_at = serializers.SerializerMethodField()
    shipment = serializers.SerializerMethodField()
    refund_status = serializers.SerializerMethodField(
        help_text="status of the latest after-sale request (requested, approved_return, returning, approved, "
        "rejected, refunded, failed) or null"
    )
    auto_receive_at = serializers.SerializerMethodField(help_text="shipped goods: completes by itself then")
    pickup = serializers.SerializerMethodField(
        help_text="self-pickup orders: {store, code (null until paid), qr (PNG data URI while it can be "
        "collected), verified_at}; null for express"
    )
    group = serializers.SerializerMethodField(help_text="拼团: the order's group, or null")
    adjust_fen = serializers.IntegerField(
        help_text="fen, signed: staff's 改价 (negative: cheaper), 0 without one; "
        "goods_fen + freight_fen - coupon_fen - points_fen + adjust_fen - member_fen = pay_fen"
    )
    delivery = serializers.SerializerMethodField(help_text=DELIVERY_HELP)

    class Meta:
        model = Order
        fields = [
            "order_no",
            "status",
            "kind",
            "lines",
            "goods_fen",
            "freight_fen",
            "coupon_fen",
            "points_fen",
            "adjust_fen",
            "member_fen",
            "pay_fen",
            "pay_method",
            "created_at",
            "pay_deadline",
            "paid_at",
            "slot",
            "booking",
            "address",
            "remark",
            "flash_sale_id",
            "shipment",
            "refund_status",
            "auto_receive_at",
            "delivery",
            "pickup",
            "group",
        ]

    def to_representation(self, order: Order) -> dict:
        """The order as API.md shows it, written out directly: the generic ModelSerializer
        path builds some twenty field objects per order and was 14 % of create's CPU in the
        flash sale (docs/PERFORMANCE.md). The declared fields above stay the schema; ``tests/orders/
        test_order_json.py`` holds this equal to the generic path for orders in every state."""
        return {
            "order_no": order.order_no,
            "status": str(order.status),
            "kind": str(order.kind),
            "lines": [
                {
                    "id": line.pk,
                    "sku_id": line.sku_id,
                    "product_id": line.product_id,
                    "name": line.name,
                    "specs": line.specs,
                    "price_fen": line.price_fen,
                    "quantity": line.quantity,
                    "amount_fen": line.amount_fen,
                }
                for line in order.lines.all()
            ],
            "goods_fen": order.goods_fen,
            "freight_fen": order.freight_fen,
            "coupon_fen": order.coupon_fen,
            "points_fen": order.points_fen,
            "adjust_fen": order.adjust_fen,
            "member_fen": order.member_fen,
            "pay_fen": order.pay_fen,
            "pay_method": str(order.pay_method),
            "created_at": self.get_created_at(order),
            "pay_deadline": self.get_pay_deadline(order),
            "paid_at": self.get_paid_at(order),
            "slot": self.get_slot(order),
            "booking": self.get_booking(order),
            "address": order.address,
            "remark": order.remark,
            "flash_sale_id": order.flash_sale_id,
            "shipment": self.get_shipment(order),
            "refund_status": self.get_refund_status(order),
            "auto_receive_at": self.get_auto_receive_at(order),
            "delivery": self.get_delivery(order),
            "pickup": self.get_pickup(order),
            "group": self.get_group(order),
        }

    @extend_schema_field(DELIVERY_SCHEMA)
    def get_delivery(self, order) -> str | None:
        return None if order.kind == Kind.CONSULTATION else str(order.delivery)

    @extend_schema_field(PickupOutSerializer(allow_null=True))
    def get_pickup(self, order) -> dict | None:
        return pickup_json(order)

    @extend_schema_field(OrderGroupSerializer(allow_null=True))
    def get_group(self, order) -> dict | None:
        return marketing_selectors.group_json(order.group) if order.group_id else None

    @extend_schema_field(ShipmentOutSerializer(allow_null=True))
    def get_shipment(self, order) -> dict | None:
        return shipments.shipment_json(order)

    def get_refund_status(self, order) -> str | None:
        if order.paid_at is None:  # never paid: no request possible, and no query (create's answer)
            return None
        latest = next(iter(order.after_sales.all()), None)  # newest first (Meta.ordering), prefetched in lists
        return latest.status if latest else None

    def get_auto_receive_at(self, order) -> str | None:
        return self._time(shipments.auto_receive_at(order))

    @staticmethod
    def _booking(order):
        """A consultation's booking (read once per order object), else None."""
        if order.kind != Kind.CONSULTATION:
            return None
        if not hasattr(order, "_booking_row"):
            order._booking_row = booking_of(order.order_no, live=False)
        return order._booking_row

    def get_slot(self, order) -> dict | None:
        booking = self._booking(order)
        return slot_json(booking) if booking is not None else None

    @extend_schema_field(BookingOutSerializer(allow_null=True))
    def get_booking(self, order) -> dict | None:
        booking = self._booking(order)
        return booking_json(order_no=order.order_no, booking=booking) if booking is not None else None

    @staticmethod
    def _time(value):
        return timezone.localtime(value).isoformat() if value else None

    def get_created_at(self, order) -> str:
        return self._time(order.created_at)

    def get_pay_deadline(self, order) -> str:
        return self._time(order.pay_deadline)

    def get_paid_at(self, order) -> str | None:
        return self._time(order.paid_at)


class OrderListQuerySerializer(serializers.Serializer):
    status = fields.FilterChoiceField(choices=OrderStatus.choices)


class TrackingEventSerializer(serializers.Serializer):
    time = serializers.CharField(help_text="YYYY-MM-DD HH:MM:SS, Shanghai")
    text = serializers.CharField()


class TrackingSerializer(serializers.Serializer):
    carrier = serializers.CharField()
    carrier_code = serializers.CharField()
    tracking_no = serializers.CharField()
    state = serializers.CharField(help_text="in_transit, collected, delivering, signed, problem, returning, unknown...")
    events = TrackingEventSerializer(many=True, help_text="newest first")


class MissingLineSerializer(serializers.Serializer):
    sku_id = serializers.IntegerField()
    name = serializers.CharField()
    specs = serializers.DictField()
    quantity = serializers.IntegerField()
    reason = serializers.ChoiceField(choices=["off_sale", "sold_out"])


class ReorderOutSerializer(ConfirmOutSerializer):
    missing = MissingLineSerializer(many=True)

    def to_representation(self, draft: dict) -> dict:
        """The confirm answer written out (``ConfirmOutSerializer``), then ``missing`` by its
        field, last as DRF orders a subclass's fields (held equal in tests/orders/test_draft_shape.py)."""
        out = super().to_representation(draft)
        missing = draft["missing"]
        out["missing"] = None if missing is None else self.fields["missing"].to_representation(missing)
        return out


class OrderCountsSerializer(serializers.Serializer):
    """The caller's orders per status (every status; the badges use the first five)."""

    unpaid = serializers.IntegerField()
    paid = serializers.IntegerField()
    shipped = serializers.IntegerField()
    completed = serializers.IntegerField()
    refunding = serializers.IntegerField()
    cancelled = serializers.IntegerField()
    refunded = serializers.IntegerField()
