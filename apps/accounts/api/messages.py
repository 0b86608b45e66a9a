"""Subscription templates, the customer's phone number and SMS codes (API.md "Messages and the
WeChat account around the shop")."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts import phones, subscriptions
from apps.accounts.api.serializers import UserSerializer
from apps.accounts.authentication import PublicTokenAuthentication
from apps.accounts.models import Customer, SubscribeTemplate
from starmall.api import fields
from starmall.api.middleware import client_ip
from starmall.api.schema import errors


class SubscribeTemplateQuerySerializer(serializers.Serializer):
    scene = fields.ChoiceField(choices=SubscribeTemplate.Scene.choices, required=False, allow_blank=True)


class SubscribeTemplateSerializer(serializers.Serializer):
    scene = fields.ChoiceField(choices=SubscribeTemplate.Scene.choices)
    kind = fields.ChoiceField(choices=SubscribeTemplate.Kind.choices)
    template_id = fields.CharField(help_text="pass to wx.requestSubscribeMessage({tmplIds})")


class SubscribeTemplateListView(APIView):
    """The active subscription templates of a scene (every scene without ``scene``): a bare array."""

    authentication_classes = [PublicTokenAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(
        parameters=[SubscribeTemplateQuerySerializer],
        responses={200: SubscribeTemplateSerializer(many=True), **errors(e400="invalid (unknown scene)")},
    )
    def get(self, request):
        query = SubscribeTemplateQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        rows = subscriptions.templates_for_scene(query.validated_data.get("scene") or None)
        return Response(SubscribeTemplateSerializer(rows, many=True).data)


class PhoneUserSerializer(UserSerializer):
    class Meta(UserSerializer.Meta):
        model = Customer
        fields = [*UserSerializer.Meta.fields, "phone"]


class PhoneInSerializer(serializers.Serializer):
    code = fields.CharField(required=False, max_length=128, help_text="from the getPhoneNumber button")
    phone = fields.RegexField(fields.MOBILE_PHONE, required=False, help_text="mainland mobile number, 11 digits")
    sms_code = fields.RegexField(r"^[0-9]{4,8}$", required=False, help_text="from POST /sms/codes")

    def validate(self, attrs):
        if attrs.get("code"):
            return attrs
        if not attrs.get("phone"):
            raise serializers.ValidationError({"phone": ["请填写手机号，或使用微信手机号授权"]})
        if not attrs.get("sms_code"):
            raise serializers.ValidationError({"sms_code": ["请填写短信验证码"]})
        return attrs


class MePhoneView(APIView):
    @extend_schema(
        request=PhoneInSerializer,
        responses={
            200: PhoneUserSerializer,
            **errors(
                e400="invalid (getPhoneNumber code refused: detail.code; wrong, expired or too often wrong sms_code: detail.sms_code)",
                e503="wechat_unavailable",
            ),
        },
    )
    def post(self, request):
        data = PhoneInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        if values.get("code"):
            customer = phones.phone_set_by_wechat_code(customer=request.user, code=values["code"])
        else:
            customer = phones.phone_set_by_sms(
                customer=request.user, phone=values["phone"], sms_code=values["sms_code"]
            )
        return Response(PhoneUserSerializer(customer).data)


class SmsCodeInSerializer(serializers.Serializer):
    phone = fields.RegexField(fields.MOBILE_PHONE, help_text="mainland mobile number, 11 digits")


class SmsCodeView(APIView):
    @extend_schema(
        request=SmsCodeInSerializer,
        responses={
            204: None,
            **errors(
                e429="throttled (one a minute; SMS_CODES_PER_DAY a day per phone and per address)",
                e503="service_unavailable (the SMS provider failed)",
            ),
        },
    )
    def post(self, request):
        data = SmsCodeInSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        phones.sms_code_send(
            customer=request.user, phone=data.validated_data["phone"], client_ip=client_ip(request) or ""
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
