from rest_framework import serializers

from apps.accounts.models import Address, Customer


class LoginInSerializer(serializers.Serializer):
    code = serializers.CharField(max_length=128)


class UserSerializer(serializers.ModelSerializer):
    class Meta:
        model = Customer
        fields = ["id", "nickname", "avatar_url", "balance_fen", "points"]


class LoginOutSerializer(serializers.Serializer):
    token = serializers.CharField()
    expires_in = serializers.IntegerField(help_text="seconds")
    user = UserSerializer()


class AddressSerializer(serializers.ModelSerializer):
    phone = serializers.RegexField(r"^\+?[0-9\- ]{6,20}$", max_length=20)

    class Meta:
        model = Address
        fields = ["id", "name", "phone", "province", "city", "district", "detail", "is_default"]
        read_only_fields = ["id"]


class ProfileInSerializer(serializers.Serializer):
    nickname = serializers.CharField(required=False, max_length=64)
    avatar_url = serializers.CharField(required=False, allow_blank=True, max_length=500,
                                       help_text="a URL answered by POST /api/v1/uploads, or empty")
