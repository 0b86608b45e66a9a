from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.distribution.models import Commission
from apps.distribution.withdrawals import MAX_AMOUNT_FEN
from starmall.api import fields


def _time(value):
    return timezone.localtime(value).isoformat() if value else None


class CodeInSerializer(serializers.Serializer):
    code = fields.CharField(max_length=32, help_text="the referrer's referral code")


class NicknameSerializer(serializers.Serializer):
    nickname = fields.CharField()


class ReferrerOutSerializer(serializers.Serializer):
    referrer = NicknameSerializer()


class DistributionSerializer(serializers.Serializer):
    referral_code = fields.CharField()
    referrer = NicknameSerializer(allow_null=True)
    available_fen = fields.IntegerField(help_text="fen; may be withdrawn")
    frozen_fen = fields.IntegerField(help_text="fen; waiting for orders to complete + the freeze days")
    withdrawn_fen = fields.IntegerField(help_text="fen paid out")
    team_level1 = fields.IntegerField()
    team_level2 = fields.IntegerField()


class CommissionSerializer(serializers.Serializer):
    order_no = fields.CharField(source="order.order_no")
    level = fields.IntegerField(help_text="1: the buyer's referrer; 2: that referrer's referrer")
    base_fen = fields.IntegerField(help_text="fen: pay_fen - freight_fen")
    amount_fen = fields.IntegerField(help_text="fen, rounded down")
    reversed_fen = fields.IntegerField(help_text="fen taken back by refunds")
    status = fields.ChoiceField(choices=["frozen", "available", "reversed"])
    created_at = serializers.SerializerMethodField()
    available_at = serializers.SerializerMethodField(help_text="null until the order completes")

    def get_created_at(self, row) -> str:
        return _time(row.created_at)

    def get_available_at(self, row) -> str | None:
        from apps.distribution.commissions import freeze_days
        from apps.distribution.selectors import commission_available_at

        return _time(commission_available_at(row, freeze_days()))


class TeamMemberSerializer(serializers.Serializer):
    nickname = fields.CharField(source="customer.nickname")
    avatar_url = fields.CharField(source="customer.avatar_url")
    joined_at = serializers.SerializerMethodField()
    order_count = fields.IntegerField()

    def get_joined_at(self, row) -> str:
        return _time(row.bound_at or row.created_at)


class CodeRequestSerializer(serializers.Serializer):
    kind = fields.ChoiceField(choices=["referral", "product", "teacher"])
    id = fields.IntegerField(required=False, min_value=1, max_value=2_000_000_000)


class CodeOutSerializer(serializers.Serializer):
    url = fields.CharField(help_text="the PNG's URL (stored once)")
    scene = fields.CharField()


class CommissionQuerySerializer(serializers.Serializer):
    status = fields.FilterChoiceField(choices=Commission.Status.values)


class TeamQuerySerializer(serializers.Serializer):
    level = fields.ChoiceField(choices=[1, 2], required=False, default=1, help_text="1 (default) or 2")


class WithdrawalInSerializer(serializers.Serializer):
    amount_fen = fields.IntegerField(
        min_value=settings.WITHDRAW_MIN_FEN,
        max_value=MAX_AMOUNT_FEN,
        help_text="fen; WITHDRAW_MIN_FEN (default 100) to 199,999 (WeChat wants a real name from 2,000 yuan)",
    )


class TransferSerializer(serializers.Serializer):
    mch_id = fields.CharField()
    app_id = fields.CharField()
    package_info = fields.CharField()


class WithdrawalSerializer(serializers.Serializer):
    withdrawal_no = fields.CharField()
    amount_fen = fields.IntegerField()
    status = fields.ChoiceField(choices=["pending", "approved", "wait_confirm", "paid", "rejected", "failed"])
    reason = fields.CharField(allow_blank=True)
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
    withdrawal_no = fields.CharField()
    amount_fen = fields.IntegerField()
    status = fields.CharField()
    created_at = serializers.SerializerMethodField()

    def get_created_at(self, row) -> str:
        return _time(row.created_at)
