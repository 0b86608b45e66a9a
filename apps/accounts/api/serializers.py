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
