"""拼团 and 砍价 for the mini-program (API.md "Group buying", "Bargaining"): thin views over
``apps.marketing.group_buys`` and ``apps.marketing.bargains``. Lists, group pages and bargain
records are public (a token is optional and never causes a 401); start and help need a token."""

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.marketing import bargains, selectors
from apps.marketing.api.serializers import FlashSaleListQuerySerializer
from apps.marketing.models import BargainCampaign, Group, GroupBuy
from starmall.api import fields
from starmall.api.schema import errors


def _time(value):
    return timezone.localtime(value).isoformat() if value else None


class _ActivitySerializer(fields.ModelSerializer):
    sku_id = fields.IntegerField()
    product_id = fields.IntegerField(source="sku.product_id")
    name = fields.CharField(source="sku.product.name")
    specs = serializers.DictField(source="sku.specs")
    starts_at = serializers.SerializerMethodField()
    ends_at = serializers.SerializerMethodField()
    stock = serializers.SerializerMethodField(
        help_text="units still buyable: the activity's own stock, capped by the SKU's stock"
    )

    def get_starts_at(self, obj) -> str:
        return _time(obj.starts_at)

    def get_ends_at(self, obj) -> str:
        return _time(obj.ends_at)

    def get_stock(self, obj) -> int:
        return max(0, min(obj.stock, obj.sku.stock))


class GroupBuySerializer(_ActivitySerializer):
    """A 拼团 activity (fen, +08:00)."""

    original_price_fen = fields.IntegerField(source="sku.price_fen", help_text="fen: the SKU's own price")

    class Meta:
        model = GroupBuy
        fields = [
            "id",
            "title",
            "sku_id",
            "product_id",
            "name",
            "specs",
            "price_fen",
            "original_price_fen",
            "group_size",
            "hours",
            "starts_at",
            "ends_at",
            "stock",
            "limit_per_customer",
        ]


class BargainSerializer(_ActivitySerializer):
    """A 砍价 campaign (fen, +08:00)."""

    class Meta:
        model = BargainCampaign
        fields = [
            "id",
            "title",
            "sku_id",
            "product_id",
            "name",
            "specs",
            "original_price_fen",
            "floor_price_fen",
            "helpers_needed",
            "hours",
            "starts_at",
            "ends_at",
            "stock",
            "limit_per_customer",
        ]


class PersonSerializer(serializers.Serializer):
    nickname = fields.CharField()
    avatar_url = fields.CharField()


class OpenGroupSerializer(serializers.Serializer):
    group_id = fields.IntegerField()
    leader = PersonSerializer()
    members = fields.IntegerField(help_text="seats held by paid orders")
    group_size = fields.IntegerField()
    expires_at = fields.CharField(help_text="ISO 8601, +08:00")


class GroupMemberSerializer(PersonSerializer):
    leader = fields.BooleanField()


class GroupDetailSerializer(serializers.Serializer):
    group_id = fields.IntegerField()
    group_buy_id = fields.IntegerField()
    status = fields.ChoiceField(choices=Group.Status.choices)
    members = GroupMemberSerializer(many=True, help_text="seats held by paid orders")
    group_size = fields.IntegerField()
    expires_at = fields.CharField(allow_null=True, help_text="leader's payment + hours; null before it")


class BargainHelpOutSerializer(serializers.Serializer):
    nickname = fields.CharField()
    cut_fen = fields.IntegerField()


class BargainRecordSerializer(serializers.Serializer):
    bargain_no = fields.CharField()
    bargain_id = fields.IntegerField()
    price_fen = fields.IntegerField(help_text="fen: the price now")
    floor_price_fen = fields.IntegerField()
    helpers = fields.IntegerField()
    helpers_needed = fields.IntegerField()
    expires_at = fields.CharField()
    status = fields.ChoiceField(choices=["open", "bought", "expired"])
    helps = BargainHelpOutSerializer(many=True)


class HelpOutSerializer(serializers.Serializer):
    cut_fen = fields.IntegerField()
    price_fen = fields.IntegerField()


class _Public(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]


class GroupBuyListView(_Public):
    @extend_schema(
        auth=[],
        parameters=[FlashSaleListQuerySerializer],
        responses={200: GroupBuySerializer(many=True), **errors(e400="invalid (status)")},
    )
    def get(self, request):
        query = FlashSaleListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(
            GroupBuySerializer(selectors.group_buy_list(status=query.validated_data.get("status")), many=True).data
        )


class GroupBuyGroupsView(_Public):
    @extend_schema(auth=[], responses={200: OpenGroupSerializer(many=True), **errors(e404="not_found")})
    def get(self, request, group_buy_id: int):
        return Response(OpenGroupSerializer(selectors.groups_open(group_buy_id=group_buy_id), many=True).data)


class GroupDetailView(_Public):
    @extend_schema(auth=[], responses={200: GroupDetailSerializer, **errors(e404="not_found")})
    def get(self, request, group_id: int):
        return Response(GroupDetailSerializer(selectors.group_detail(group_id=group_id)).data)


class BargainListView(_Public):
    @extend_schema(
        auth=[],
        parameters=[FlashSaleListQuerySerializer],
        responses={200: BargainSerializer(many=True), **errors(e400="invalid (status)")},
    )
    def get(self, request):
        query = FlashSaleListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(
            BargainSerializer(bargains.bargain_list(status=query.validated_data.get("status")), many=True).data
        )


class BargainStartView(APIView):
    @extend_schema(
        request=None,
        responses={
            201: BargainRecordSerializer,
            200: BargainRecordSerializer,
            **errors(
                e404="not_found", e409="invalid_state (not live), limit_exceeded (bought the limit), insufficient_stock"
            ),
        },
    )
    def post(self, request, bargain_id: int):
        record, created = bargains.bargain_start(campaign_id=bargain_id, customer_id=request.user.pk)
        return Response(
            BargainRecordSerializer(bargains.bargain_json(record)).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class BargainRecordView(_Public):
    @extend_schema(auth=[], responses={200: BargainRecordSerializer, **errors(e404="not_found")})
    def get(self, request, bargain_no: str):
        return Response(
            BargainRecordSerializer(bargains.bargain_json(bargains.bargain_get(bargain_no=bargain_no))).data
        )


class BargainHelpView(APIView):
    @extend_schema(
        request=None,
        responses={
            201: HelpOutSerializer,
            **errors(
                e404="not_found",
                e409="invalid_state (own record, not open, at the floor), "
                "limit_exceeded (helped it already, BARGAIN_HELPS_PER_DAY reached)",
            ),
        },
    )
    def post(self, request, bargain_no: str):
        result = bargains.bargain_help(bargain_no=bargain_no, helper_id=request.user.pk)
        return Response(HelpOutSerializer(result).data, status=status.HTTP_201_CREATED)
