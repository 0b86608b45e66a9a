from rest_framework import serializers

from apps.accounts.models import Address, Customer
from starmall.api import fields


class LoginInSerializer(serializers.Serializer):
    code = fields.CharField(max_length=128)
    scene = fields.CharField(
        required=False,
        allow_blank=True,
        default="",
        trim_whitespace=False,
        help_text="the decoded scene of the mini-program code opened: r=<referral_code> "
        "or c=<channel_code>; anything else is ignored",
    )

    def to_internal_value(self, data):
        # an odd scene (too long, not a string) is ignored, never an error (API.md)
        if (
            isinstance(data, dict)
            and "scene" in data
            and (not isinstance(data["scene"], str) or len(data["scene"]) > 128)
        ):
            data = {k: v for k, v in data.items() if k != "scene"}
        return super().to_internal_value(data)


class UserSerializer(fields.ModelSerializer):
    class Meta:
        model = Customer
        fields = ["id", "nickname", "avatar_url", "balance_fen", "points", "birthday"]


class LoginOutSerializer(serializers.Serializer):
    token = fields.CharField()
    expires_in = fields.IntegerField(help_text="seconds")
    user = UserSerializer()


class AddressSerializer(fields.ModelSerializer):
    phone = fields.RegexField(fields.MOBILE_PHONE, help_text="mainland mobile number, 11 digits (for the courier)")

    class Meta:
        model = Address
        fields = ["id", "name", "phone", "province", "city", "district", "detail", "is_default"]
        read_only_fields = ["id"]


class ProfileInSerializer(serializers.Serializer):
    nickname = fields.CharField(required=False, max_length=64)
    avatar_url = fields.CharField(
        required=False, allow_blank=True, max_length=500, help_text="a URL answered by POST /api/v1/uploads, or empty"
    )
    birthday = fields.DateField(
        required=False, allow_null=True, help_text="YYYY-MM-DD; null clears it (birthday coupons)"
    )
