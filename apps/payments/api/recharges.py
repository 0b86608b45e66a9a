"""Recharge (top up the balance) for the mini-program (API.md "Coupons, points, balance,
recharge, sign-in"): thin views over ``apps.payments.recharges``."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.payments import recharges
from apps.payments.api.serializers import PayParamsSerializer
from apps.payments.models import Recharge, RechargePackage
from starmall.api import fields
from starmall.api.schema import MAX_ID, errors


class PackageSerializer(fields.ModelSerializer):
    class Meta:
        model = RechargePackage
        fields = ["id", "pay_fen", "bonus_fen"]


class RechargeInSerializer(serializers.Serializer):
    package_id = fields.IntegerField(min_value=1, max_value=MAX_ID)


class RechargeSerializer(fields.ModelSerializer):
    class Meta:
        model = Recharge
        fields = ["recharge_no", "pay_fen", "bonus_fen", "status"]


class RechargeCreatedSerializer(RechargeSerializer):
    pay_params = PayParamsSerializer(help_text="wx.requestPayment parameters")

    class Meta(RechargeSerializer.Meta):
        fields = RechargeSerializer.Meta.fields + ["pay_params"]


class PackageListView(APIView):
    @extend_schema(responses=PackageSerializer(many=True))
    def get(self, request):
        return Response(PackageSerializer(recharges.packages_active(), many=True).data)


class RechargeCreateView(APIView):
    @extend_schema(
        request=RechargeInSerializer,
        responses={
            201: RechargeCreatedSerializer,
            **errors(e404="not_found (no such active package)", e503="wechat_unavailable"),
        },
    )
    def post(self, request):
        data = RechargeInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        recharge, params = recharges.recharge_create(
            customer=request.user, package_id=data.validated_data["package_id"]
        )
        recharge.pay_params = params
        return Response(RechargeCreatedSerializer(recharge).data, status=status.HTTP_201_CREATED)


class RechargeDetailView(APIView):
    @extend_schema(responses={200: RechargeSerializer, **errors(e404="not_found")})
    def get(self, request, recharge_no: str):
        return Response(
            RechargeSerializer(recharges.recharge_get(recharge_no=recharge_no, customer_id=request.user.pk)).data
        )
