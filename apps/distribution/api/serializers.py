from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


def _time(value):
    return timezone.localtime(value).isoformat() if value else None


class CodeInSerializer(serializers.Serializer):
    code = serializers.CharField(max_length=32, help_text="the referrer's referral code")


class NicknameSerializer(serializers.Serializer):
    nickname = serializers.CharField()


class ReferrerOutSerializer(serializers.Serializer):
    referrer = NicknameSerializer()


class DistributionSerializer(serializers.Serializer):
    referral_code = serializers.CharField()
    referrer = NicknameSerializer(allow_null=True)
    available_fen = serializers.IntegerField(help_text="fen; may be withdrawn")
    frozen_fen = serializers.IntegerField(help_text="fen; waiting for orders to complete + the freeze days")
    withdrawn_fen = serializers.IntegerField(help_text="fen paid out")
    team_level1 = serializers.IntegerField()
    team_level2 = serializers.IntegerField()


class CommissionSerializer(serializers.Serializer):
    order_no = serializers.CharField(source="order.order_no")
    level = serializers.IntegerField(help_text="1: the buyer's referrer; 2: that referrer's referrer")
    base_fen = serializers.IntegerField(help_text="fen: pay_fen - freight_fen")
    amount_fen = serializers.IntegerField(help_text="fen, rounded down")
    reversed_fen = serializers.IntegerField(help_text="fen taken back by refunds")
    status = serializers.ChoiceField(choices=["frozen", "available", "reversed"])
    created_at = serializers.SerializerMethodField()
    available_at = serializers.SerializerMethodField(help_text="null until the order completes")

    def get_created_at(self, row) -> str:
        return _time(row.created_at)

    def get_available_at(self, row) -> str | None:
        from apps.distribution.commissions import freeze_days
        from apps.distribution.selectors import commission_available_at

        return _time(commission_available_at(row, freeze_days()))


class TeamMemberSerializer(serializers.Serializer):
    nickname = serializers.CharField(source="customer.nickname")
    avatar_url = serializers.CharField(source="customer.avatar_url")
    joined_at = serializers.SerializerMethodField()
    order_count = serializers.IntegerField()

    def get_joined_at(self, row) -> str:
        return _time(row.bound_at or row.created_at)


class CodeRequestSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["referral", "product", "teacher"])
    id = serializers.IntegerField(required=False, min_value=1, max_value=2_000_000_000)


class CodeOutSerializer(serializers.Serializer):
    url = serializers.CharField(help_text="the PNG's URL (stored once)")
    scene = serializers.CharField()


class WithdrawalInSerializer(serializers.Serializer):
    amount_fen = serializers.IntegerField(min_value=1, max_value=100_000_000, help_text="fen")


class TransferSerializer(serializers.Serializer):
    mch_id = serializers.CharField()
    app_id = serializers.CharField()
    package_info = serializers.CharField()


class WithdrawalSerializer(serializers.Serializer):
    withdrawal_no = serializers.CharField()
    amount_fen = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["pending", "approved", "wait_confirm", "paid", "rejected", "failed"])
    reason = serializers.CharField(allow_blank=True)
    transfer = serializers.SerializerMethodField(help_text="in wait_confirm: the wx.requestMerchantTransfer arguments")
    created_at = serializers.SerializerMethodField()

    def get_created_at(self, row) -> str:
        return _time(row.created_at)

    @extend_schema_field(TransferSerializer(allow_null=True))
    def get_transfer(self, row):
        bill = getattr(row, "transfer", None)
        if row.status != "wait_confirm" or bill is None or not bill.package_info:
            return None
        return {"mch_id": settings.WECHAT_MCH_ID, "app_id": settings.WECHAT_APPID, "package_info": bill.package_info}


class WithdrawalCreatedSerializer(serializers.Serializer):
    withdrawal_no = serializers.CharField()
    amount_fen = serializers.IntegerField()
    status = serializers.CharField()
    created_at = serializers.SerializerMethodField()

    def get_created_at(self, row) -> str:
        return _time(row.created_at)
