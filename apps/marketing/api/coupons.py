"""Coupons and the daily sign-in for the mini-program (API.md "Coupons, points, balance,
recharge, sign-in"): thin views over ``apps.marketing.coupons`` / ``signin``."""

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts import selectors as account_selectors
from apps.accounts.models import Coupon
from apps.marketing import coupons, signin
from apps.marketing.models import CouponTemplate
from starmall.api import fields
from starmall.api.pagination import PageNumberPagination
from starmall.api.schema import MAX_ID, errors


def _time(value):
    return timezone.localtime(value).isoformat() if value else None


class CouponTemplateSerializer(fields.ModelSerializer):
    """A template the caller may receive now. Money in fen; ``percent``: % off (PERCENT)."""

    template_id = fields.IntegerField(source="pk")
    valid_from = serializers.SerializerMethodField()
    valid_to = serializers.SerializerMethodField()
    remaining = fields.IntegerField(help_text="coupons left to hand out")
    max_discount_fen = fields.IntegerField(allow_null=True)
    valid_days = fields.IntegerField(
        allow_null=True, help_text="valid this many days after receipt; null: the fixed window valid_from..valid_to"
    )

    class Meta:
        model = CouponTemplate
        fields = [
            "template_id",
            "name",
            "kind",
            "amount_fen",
            "percent",
            "max_discount_fen",
            "threshold_fen",
            "scope",
            "valid_from",
            "valid_to",
            "valid_days",
            "remaining",
            "per_customer",
        ]

    def get_valid_from(self, t) -> str | None:
        return _time(t.valid_from)

    def get_valid_to(self, t) -> str | None:
        return _time(t.valid_to)


class CouponSerializer(fields.ModelSerializer):
    """A coupon the caller holds. ``status``: usable, used or expired."""

    name = fields.CharField(source="title")
    amount_fen = fields.IntegerField(source="discount_fen", help_text="fen off (kind amount)")
    threshold_fen = fields.IntegerField(source="min_spend_fen", help_text="fen of in-scope goods needed")
    max_discount_fen = fields.IntegerField(allow_null=True)
    valid_from = serializers.SerializerMethodField()
    valid_to = serializers.SerializerMethodField()
    status = serializers.SerializerMethodField()
    scope = serializers.SerializerMethodField()

    class Meta:
        model = Coupon
        fields = [
            "id",
            "name",
            "kind",
            "amount_fen",
            "percent",
            "max_discount_fen",
            "threshold_fen",
            "valid_from",
            "valid_to",
            "status",
            "scope",
            "template_id",
            "used_order_no",
        ]

    def get_valid_from(self, c) -> str | None:
        return _time(c.valid_from)

    def get_valid_to(self, c) -> str:
        return _time(c.valid_until)

    def get_status(self, c) -> str:
        if c.status == Coupon.Status.USED:
            return "used"
        return "expired" if c.valid_until <= timezone.now() else "usable"

    def get_scope(self, c) -> str:
        return c.template.scope if c.template_id else CouponTemplate.Scope.ALL


class ReceiveInSerializer(serializers.Serializer):
    template_id = fields.IntegerField(min_value=1, max_value=MAX_ID)


class MyCouponsQuerySerializer(serializers.Serializer):
    status = fields.FilterChoiceField(choices=["usable", "used", "expired"], help_text="omitted or empty: all")


class CouponAvailableView(APIView):
    @extend_schema(responses=CouponTemplateSerializer(many=True))
    def get(self, request):
        templates = coupons.templates_receivable(customer_id=request.user.pk)
        return Response(CouponTemplateSerializer(templates, many=True).data)


class CouponReceiveView(APIView):
    @extend_schema(
        request=ReceiveInSerializer,
        responses={
            201: CouponSerializer,
            **errors(
                e404="not_found (no such template, or not active)",
                e409="limit_exceeded (per-customer limit reached, or none left), invalid_state (receiving ended)",
            ),
        },
    )
    def post(self, request):
        data = ReceiveInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        coupon = coupons.coupon_receive(template_id=data.validated_data["template_id"], customer_id=request.user.pk)
        return Response(CouponSerializer(coupon).data, status=status.HTTP_201_CREATED)


class MyCouponsView(ListAPIView):
    serializer_class = CouponSerializer
    pagination_class = PageNumberPagination

    @extend_schema(parameters=[MyCouponsQuerySerializer])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        query = MyCouponsQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return account_selectors.coupons_of(
            customer_id=self.request.user.pk, status=query.validated_data.get("status")
        ).select_related("template")


class SignInOutSerializer(serializers.Serializer):
    date = serializers.DateField(help_text="the Shanghai calendar day")
    points = fields.IntegerField(help_text="points this day's sign-in earned")
    streak = fields.IntegerField(help_text="consecutive days, this one included")
    already = fields.BooleanField(help_text="true: signed in before today, nothing credited now")


class SignInView(APIView):
    @extend_schema(request=None, responses={200: SignInOutSerializer})
    def post(self, request):
        result = signin.sign_in(customer_id=request.user.pk)
        return Response(SignInOutSerializer(result).data)
